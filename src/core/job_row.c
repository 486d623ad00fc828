/* A job and a workflow as rows of the database (job_row.h). */
#include "job_row.h"

#include <string.h>

const db_job *job_row(const job *j, db_job *out)
{
    *out = (db_job){
        .seq = j->seq,
        .name = j->name,
        .state = j->state,
        .owner_uid = j->owner_uid,
        .owner_gid = j->owner_gid,
        .uid = j->uid,
        .gid = j->gid,
        .sandbox_uid = j->sandbox_uid,
        .slurm = j->slurm,
        .req = j->req,
        .created_ms = j->created_ms,
        .scheduled_ms = j->scheduled_ms,
        .started_ms = j->started_ms,
        .ended_ms = j->ended_ms,
        .has_exit = j->has_exit,
        .exit_code = j->exit_code,
        .signal = j->signal,
        .signal_name = j->signal_name,
        .end_reason = j->end_reason,
        .error = j->error,
        .stopped_by = j->stopped_by,
        .cpu_ns = j->usage.cpu_ns,
        .memory_peak_bytes = j->usage.memory_peak_bytes,
        .io_read_bytes = j->usage.io_read_bytes,
        .io_write_bytes = j->usage.io_write_bytes,
        .gpu_ms_before = j->usage.gpu_ms_before,
        .gpus = j->gpus,
        .preemptions = j->preemptions,
        .preempting = j->preempting,
        .requeue_asked = j->requeue_asked,
        .requeue_hold = j->requeue_hold,
        .suspended_ms = j->suspended_ms,
        .suspended_since_ms = j->suspended_since_ms,
        .wf_index = j->wf_index,
        .gpu_fault = j->gpu_fault,
        .shim_pid = j->shim_pid,
        .shim_start = j->shim_start,
        .init_pid = j->init_pid,
        .waiter_pid = j->waiter_pid,
        .waiter_start = j->waiter_start,
        .net = j->net,
        .array_task = j->array_task,
        .after_met = j->after_met,
        .joined_ms = j->joined_ms,
        .ended_held = j->ended_held,
        .log_bytes = j->log_bytes,
    };
    memcpy(out->array_id, j->array_id, sizeof out->array_id);
    memcpy(out->id, j->id, sizeof out->id);
    memcpy(out->wf_id, j->wf_id, sizeof out->wf_id);
    return out;
}

const db_workflow *workflow_row(const workflow *wf, db_workflow *out)
{
    *out = (db_workflow){
        .seq = wf->seq,
        .owner_uid = wf->owner_uid,
        .owner_gid = wf->owner_gid,
        .state = wf->state,
        .created_ms = wf->created_ms,
        .started_ms = wf->started_ms,
        .ended_ms = wf->ended_ms,
        .canceled_by = wf->canceled_by,
        .reason = wf->reason,
        .doc = wf->doc,
    };
    memcpy(out->id, wf->id, sizeof out->id);
    return out;
}

const db_array *array_row(const jarray *a, array_row_buf *b)
{
    arrayspec_format(a->spec, true, b->spec, sizeof b->spec);
    arrayspec_format(arrays_skip(a), false, b->skip, sizeof b->skip);
    arrayspec_format(arrays_ahead(a), false, b->ahead, sizeof b->ahead);
    arrayspec_format(arrays_released(a), false, b->released, sizeof b->released);
    b->row = (db_array){.seq = a->seq, .name = a->name, .owner_uid = a->owner_uid, .owner_gid = a->owner_gid,
                        .req = a->req, .spec = b->spec, .created_ms = a->created_ms, .made = a->made,
                        .skip = arrays_skip(a)->n ? b->skip : NULL, .ahead = arrays_ahead(a)->n ? b->ahead : NULL,
                        .canceled_by = a->canceled_by,
                        .canceled_why = a->canceled_by < -1 ? a->canceled_why : NULL, .held = a->held,
                        .held_by = a->held_by, .wf_index = a->wf_index, .after_met = a->after_met, .joined_ms = a->joined_ms,
                        .canceled_ms = a->canceled_ms, .gone_exit = a->gone_exit,
                        .released = arrays_released(a)->n ? b->released : NULL};
    for (int s = JS_STOPPED; s < JS_COUNT; s++)
        b->row.gone[s - JS_STOPPED] = a->gone[s];
    memcpy(b->row.id, a->id, sizeof b->row.id);
    memcpy(b->row.wf_id, a->wf_id, sizeof b->row.wf_id);
    return &b->row;
}
