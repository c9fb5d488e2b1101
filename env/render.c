/* render.c -- a scored plan as a JSON object (render.h).
 *
 * The figures go out at full precision: reals are json_real, which the
 * callers dump with JSON_REAL_PRECISION(17).
 */
#include "env/render.h"

static const char *reason_name(model_reason r) {
    switch (r) {
    case MODEL_FEASIBLE: return "feasible";
    case MODEL_ERR_THROUGHPUT: return "throughput";
    case MODEL_ERR_CAPACITY: return "capacity";
    case MODEL_ERR_MEMORY: return "memory";
    case MODEL_ERR_PLACEMENT: return "placement";
    }
    return "unknown";
}

json_t *render_plan_json(const model_job *job, const model_cluster *cl,
                         const model_plan *plan) {
    json_t *o = json_object();
    int feasible = plan->reason == MODEL_FEASIBLE;
    json_object_set_new(o, "feasible", json_boolean(feasible));
    if (!feasible) {
        json_object_set_new(o, "reason", json_string(plan->why));
        json_object_set_new(o, "rule", json_string(reason_name(plan->reason)));
    }
    json_t *assign = json_array();
    json_t *stages = json_array();
    for (int s = 0; s < plan->n_stages; s++) {
        const model_stage *st = &plan->stages[s];
        for (int l = st->first; l <= st->last; l++)
            json_array_append_new(assign, json_string(cl->types[st->type].name));
        json_t *layers = json_array();
        for (int l = st->first; l <= st->last; l++)
            json_array_append_new(layers, json_string(job->layers[l].name));
        json_array_append_new(stages, json_pack(
            "{s:s, s:i, s:i, s:o, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f}",
            "type", cl->types[st->type].name, "first", st->first, "last", st->last,
            "layers", layers, "units", st->units, "n_ps", st->n_ps,
            "compute", st->compute, "io", st->io, "xfer", st->xfer, "sync", st->sync,
            "step", st->step, "throughput", st->throughput, "mem", st->mem));
    }
    json_object_set_new(o, "assignment", assign);
    if (job->curve.fitted)
        json_object_set_new(o, "curve", json_pack("{s:s, s:i, s:[f,f,f,f]}", "kind", "fitted",
                                                  "points", job->n_points, "th",
                                                  job->curve.th[0], job->curve.th[1],
                                                  job->curve.th[2], job->curve.th[3]));
    if (feasible || plan->placed) {
        json_object_set_new(o, "cost", json_real(plan->cost));
        json_object_set_new(o, "throughput", json_real(plan->throughput));
        json_object_set_new(o, "time", json_real(plan->time));
        json_object_set_new(o, "unit_price", json_real(plan->unit_price));
    } else {
        json_object_set_new(o, "cost", json_null());
        json_object_set_new(o, "throughput", json_null());
        json_object_set_new(o, "time", json_null());
    }
    json_object_set_new(o, "stages", stages);
    if (plan->placed) {
        json_object_set_new(o, "cross_node_bytes", json_real(plan->cross_node_bytes));
        json_object_set_new(o, "cross_zone_bytes", json_real(plan->cross_zone_bytes));
    }
    return o;
}
