/* A CDI specification (Container Device Interface, cdi.k8s.io; the format podman, containerd
 * and CRI-O read from /etc/cdi) for this machine's NVIDIA GPUs, from discovery: kind
 * nvidia.com/gpu, one device per GPU by index and by UUID, one per MIG device (GPU:MIG and its
 * UUID), and "all"; each device's containerEdits hold its device nodes with their real
 * numbers, the spec's own hold the shared nodes (nvidiactl, UVM), the driver libraries as
 * read-only mounts and the NVIDIA environment. `joblet cdi generate` writes it.
 *
 * GPUs simulated by gpu.fixture have no device node and no driver: their spec names them all
 * the same (to see what a real machine's would hold) with cdiVersion 0.6.0 and the annotation
 * GPU_CDI_SIMULATED_MARK "true" (and a note), and `joblet cdi generate` says so on stderr. */
#ifndef JOBLET_GPU_CDI_H
#define JOBLET_GPU_CDI_H

#include <jansson.h>

#include "../common/err.h"

#define GPU_CDI_SIMULATED_MARK "joblet.dev/simulated"

/* From core.gpu (discovery), core.cfg.gpu (dev_root, proc_root) and the driver libraries;
 * NULL with e set when there is no GPU to describe. */
json_t *gpu_cdi_spec_json(jerr *e);

#endif
