package dev.sandgate.driver.kubernetes;

import static java.util.Objects.requireNonNull;

import java.net.URI;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * A request to the Kubernetes API as RBAC sees it: the attributes the API server's authorizer checks (verb, API
 * group, resource, subresource, namespace), worked out from the method and path the way the API server's request-info
 * resolver does. A path outside {@code /api} and {@code /apis/<group>/<version>/<resource>} (discovery, {@code
 * /version}) is a non-resource request.
 *
 * @param verb get, list, watch, create, update, patch, delete or deletecollection; for a non-resource request the
 *     lowercase HTTP method
 * @param apiGroup the API group, empty for the core group
 * @param resource the resource, e.g. {@code sandboxes}; empty for a non-resource request
 * @param subresource e.g. {@code status}; empty if none
 * @param namespace the namespace; empty for a cluster-scoped or all-namespaces request
 * @param path the path without its query, for messages and non-resource rules
 */
record ApiRequest(String verb, String apiGroup, String resource, String subresource, String namespace, String path) {
    ApiRequest {
        requireNonNull(verb, "verb is null");
        requireNonNull(apiGroup, "apiGroup is null");
        requireNonNull(resource, "resource is null");
        requireNonNull(subresource, "subresource is null");
        requireNonNull(namespace, "namespace is null");
        requireNonNull(path, "path is null");
    }

    boolean isResourceRequest() {
        return !resource.isEmpty();
    }

    /** {@code resource} or {@code resource/subresource}, as RBAC rules name it. */
    String qualifiedResource() {
        return subresource.isEmpty() ? resource : resource + "/" + subresource;
    }

    static ApiRequest parse(String method, String pathAndQuery) {
        URI uri = URI.create(pathAndQuery);
        String path = uri.getPath();
        String query = uri.getRawQuery() == null ? "" : uri.getRawQuery();
        List<String> segments =
                Arrays.stream(path.split("/")).filter(s -> !s.isEmpty()).toList();
        String httpVerb = method.toLowerCase(Locale.ROOT);
        String group;
        List<String> rest;
        if (segments.size() >= 2 && segments.get(0).equals("api")) {
            group = "";
            rest = segments.subList(2, segments.size());
        } else if (segments.size() >= 3 && segments.get(0).equals("apis")) {
            group = segments.get(1);
            rest = segments.subList(3, segments.size());
        } else {
            return new ApiRequest(httpVerb, "", "", "", "", path);
        }
        if (rest.isEmpty()) {
            return new ApiRequest(httpVerb, "", "", "", "", path); // discovery of a group version
        }
        String namespace = "";
        // /namespaces/{ns}/{resource}... is namespaced; /namespaces and /namespaces/{name} are the namespaces resource
        if (rest.get(0).equals("namespaces") && rest.size() >= 3) {
            namespace = rest.get(1);
            rest = rest.subList(2, rest.size());
        }
        String resource = rest.get(0);
        String name = rest.size() >= 2 ? rest.get(1) : "";
        String subresource = rest.size() >= 3 ? rest.get(2) : "";
        boolean watch = Arrays.asList(query.split("&")).contains("watch=true");
        String verb = switch (httpVerb) {
            case "get" -> watch ? "watch" : name.isEmpty() ? "list" : "get";
            case "post" -> "create";
            case "put" -> "update";
            case "patch" -> "patch";
            case "delete" -> name.isEmpty() ? "deletecollection" : "delete";
            default -> httpVerb;
        };
        return new ApiRequest(verb, group, resource, subresource, namespace, path);
    }
}
