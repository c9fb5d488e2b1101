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

#include <jansson.h>

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

/* What a Node object says of itself, as clusters write it: the one reader
 * of node facts, shared by `strata import-nodes` and the scheduler
 * extender (service/k8s.c). Strings point into the node object. */
typedef struct {
    const char *inst, *inst_key; /* instance-type label and its key, or NULL */
    const char *prod, *prod_key; /* GPU product label (GKE, then NVIDIA GFD), or NULL */
    const char *zone;            /* topology (else failure-domain) zone label, or NULL */
    double gpus;                 /* allocatable nvidia.com/gpu (else amd.com/gpu), whole; 0 */
    double cpus;                 /* allocatable cpu; -1 when absent */
    int is_gpu;                  /* gpus >= 1 */
} imp_node_facts;

/* imp_node_read reads node (a v1 Node object) into *f. Quantities are read
 * as Kubernetes writes them ("2", "2k", "95500m", "1e3"), as JSON strings
 * or numbers. Returns 0, or -1 with why (naming the resource and its text)
 * when an allocatable GPU count is not a whole quantity or the cpu is not a
 * quantity. */
int imp_node_read(const json_t *node, imp_node_facts *f, char *why, size_t whylen);

/* imp_catalogue_match returns the catalogue entry that types a node: a GPU
 * node by its instance type among the `by: instance` GPU entries, then by
 * its GPU product; a CPU node by its instance type among the CPU entries.
 * NULL when none does (cat may be NULL). */
const imp_entry *imp_catalogue_match(const imp_catalogue *cat, const imp_node_facts *f);

/* imp_cpu_units is a CPU node's units: cpus / unit_cpus to the nearest
 * whole number, ties down (the kubelet reserves a fraction of a core), and
 * never below 0. */
int imp_cpu_units(double cpus, double unit_cpus);

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
