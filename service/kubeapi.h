/* kubeapi.h -- the few calls the daemon makes to the Kubernetes API server.
 *
 * With the extender's bindVerb, kube-scheduler delegates the bind of a pod
 * to the extender, which must then create the pod's Binding itself:
 * POST {api}/api/v1/namespaces/{namespace}/pods/{name}/binding with a
 * v1 Binding {apiVersion: v1, kind: Binding, metadata: {name, namespace,
 * uid}, target: {apiVersion: v1, kind: Node, name}}, authenticated by the
 * pod's service account token (Authorization: Bearer, the file read at
 * every call: projected tokens are rotated), over HTTPS checked against the
 * cluster's CA (or plain HTTP to a loopback test server). libcurl does the
 * HTTP and TLS.
 *
 * Thread-safe: each call uses its own curl handle; kapi_global_init must
 * have run once before any thread calls.
 */
#ifndef STRATA_SERVICE_KUBEAPI_H
#define STRATA_SERVICE_KUBEAPI_H

#include <stddef.h>

typedef struct kapi_client kapi_client;

/* In-cluster defaults (the service account's mounted files). */
#define KAPI_SA_TOKEN "/var/run/secrets/kubernetes.io/serviceaccount/token"
#define KAPI_SA_CA "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"

/* kapi_global_init initialises libcurl once per process (not thread-safe:
 * call it before starting threads). Returns 0, or -1. */
int kapi_global_init(void);

/* kapi_create checks its arguments and returns a client: url is the API
 * server ("https://kubernetes.default.svc", or "http://127.0.0.1:PORT"),
 * token_file the bearer token's file (NULL: none), ca_file the CA bundle
 * for https (NULL: the system's), timeout_ms the bound on one call.
 * Returns NULL with a message in err (a URL that is not http(s), a token
 * file that cannot be read). kapi_free accepts NULL. */
kapi_client *kapi_create(const char *url, const char *token_file, const char *ca_file,
                         long timeout_ms, char *err, size_t errlen);
void kapi_free(kapi_client *c);

/* kapi_bind creates the Binding of pod namespace/name (uid may be "": the
 * API server then does not check it) to node. Returns 0 when the API
 * server answered 201, or -1 with why in err: the status and the API
 * server's Status message ("409 Conflict: pod p is already assigned to
 * node n"), or the transport's error. */
int kapi_bind(const kapi_client *c, const char *ns, const char *name, const char *uid,
              const char *node, char *err, size_t errlen);

#endif
