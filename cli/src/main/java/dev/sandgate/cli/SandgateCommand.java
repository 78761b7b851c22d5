package dev.sandgate.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** A command that talks to the gateway: it runs with a {@link Session} that is closed afterwards. */
abstract class SandgateCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    /** The exit status of a command that succeeded (exec: the command's exit code). */
    int exitStatus;

    @Override
    public final Integer call() throws Exception {
        SandgateCli cli = (SandgateCli) spec.root().userObject();
        int status = cli.withSession(this::run, sentRequestId());
        return status == SandgateCli.EXIT_OK ? exitStatus : status;
    }

    abstract void run(Session session) throws Exception;

    /** The request_id this command sends, or null for a command that changes nothing and sends none. */
    String sentRequestId() {
        return null;
    }

    ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
