/* import.h -- a strata cluster from a Kubernetes cluster's nodes.
 *
 * `kubectl get nodes -o json` (a v1 List of Node objects, or one Node) is
 * read with jansson; each node's type comes from its labels and a shipped
 * catalogue of known instance types and GPU products
 * (configs/catalogue/instances.yaml, read with the config walker cfg_doc):
 *
 *   instance type   node.kubernetes.io/instance-type, else
 *                   beta.kubernetes.io/instance-type
 *   GPU product     cloud.google.com/gke-accelerator (GKE), else
 *                   nvidia.com/gpu.product (NVIDIA GPU feature discovery)
 *
 * A node with allocatable nvidia.com/gpu > 0 is a GPU node: its instance
 * type is looked up among the catalogue's `by: instance` GPU entries first,
 * then its GPU product among the `by: gpu` entries; its units are its
 * allocatable GPUs. Any other node is a CPU node: its instance type among
 * the CPU entries; its units are allocatable cpu / the entry's unit_cpus,
 * to the nearest whole number (ties down), since the kubelet reserves a
 * fraction of a core. Zones come from topology.kubernetes.io/zone (else
 * failure-domain.beta.kubernetes.io/zone). docs/calibration.md is the
 * reference of the catalogue's keys.
 *
 * imp_cluster_write prints any model_cluster in the schema of
 * configs/clusters/ files, so that a run config can `include:` it;
 * `strata calibrate` writes its calibrated cluster with it too.
 */
#ifndef STRATA_IMPORT_H
#define STRATA_IMPORT_H

#include <stddef.h>
#include <stdio.h>

#include "env/model.h"

#define IMP_NOTE_MAX 512

/* One catalogue entry: a strata type (figures per unit; count unused) and
 * the label values it is known by. */
typedef struct {
    model_type type;
    int by_gpu;        /* 0: matched on the instance type; 1: on the GPU product */
    int n_match;
    char (*match)[MODEL_NAME_MAX]; /* [n_match] label values */
    double node_bw;    /* bytes/s of one node's link (a node's bw) */
    int ps_slots;      /* ps tasks a node hosts beside its units */
    double unit_cpus;  /* CPU entries: allocatable cpus per unit */
} imp_entry;

typedef struct {
    char path[1024];
    int n;
    imp_entry *entries; /* [n] */
} imp_catalogue;

/* imp_catalogue_load reads a catalogue file (top-level key `types:`, a list
 * of entries). Returns it (free with imp_catalogue_free), or NULL with
 * "file:line:col: types[i].key: message" in err[errlen]. */
imp_catalogue *imp_catalogue_load(const char *path, char *err, size_t errlen);
void imp_catalogue_free(imp_catalogue *cat);

/* imp_quantity parses a Kubernetes resource quantity ("96", "95500m",
 * "2k", "1Gi", "1.5", "1e3") into *out. Returns 0, or -1 when text is not
 * a quantity (or is negative, NaN or out of range). */
int imp_quantity(const char *text, double *out);

/* The result of an import: a cluster (types, zones, nodes; count is the
 * sum of the nodes' units) and a comment per type saying where its figures
 * came from (note[t]); placeholder[t] is 1 for a type made up for an
 * unknown label under allow_unknown. */
typedef struct {
    model_cluster cl;
    char (*note)[IMP_NOTE_MAX]; /* [cl.n_types] */
    int *placeholder;           /* [cl.n_types] */
    int n_placeholders;
} imp_result;

/* The limit on a nodes JSON file: 128 MiB. `kubectl get nodes -o json`
 * writes some 5 to 20 KB a node (kubelet reports at most 50 images), so
 * MODEL_MAX_NODES nodes stay well under it. */
#define IMP_NODES_MAX_BYTES ((size_t)128 << 20)

/* imp_nodes_import reads the nodes JSON at path (a regular file of at most
 * IMP_NODES_MAX_BYTES, read with file_read) against cat. Returns the
 * result (free with imp_result_free), or NULL with a message in err[errlen]
 * naming the file, the node and what is wrong (an unknown instance type or
 * GPU product names the label, its value and the catalogue keys to fill
 * in). With allow_unknown, an unknown type becomes a placeholder type named
 * after the label value instead of an error. */
imp_result *imp_nodes_import(const char *path, const imp_catalogue *cat, int allow_unknown,
                             char *err, size_t errlen);
void imp_result_free(imp_result *r);

/* imp_cluster_write prints cl as a `cluster:` YAML document that the run
 * loader reads back to the same figures (exactly: a figure is written with
 * a unit only when that text parses back to the same double). note, when
 * not NULL, holds a comment line (or "") for each type, written above it;
 * header, when not NULL, is written first as comment lines. */
void imp_cluster_write(FILE *f, const model_cluster *cl, const char (*note)[IMP_NOTE_MAX],
                       const char *header);

#endif
