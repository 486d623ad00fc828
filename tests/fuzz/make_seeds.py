#!/usr/bin/env python3
"""Writes the seed corpus of each fuzz harness (corpus/<name>/) from the project's own inputs:
the GPU machine fixtures (tests/fixtures), the example workflows, the bad requests of
tests/integration/test_request_schema.py, and small hand-made inputs. Seeds are small on
purpose (libFuzzer's default input length follows the largest seed). Files named regress-* are
inputs that once crashed a harness; this script never touches them.

    python3 tests/fuzz/make_seeds.py        # rewrites every seed-* file
"""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
MACHINES = sorted(m for m in os.listdir(FIXTURES) if os.path.isdir(os.path.join(FIXTURES, m)))


def out(harness, name, data):
    d = os.path.join(HERE, "corpus", harness)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def clean():
    for h in os.listdir(os.path.join(HERE, "corpus")) if os.path.isdir(os.path.join(HERE, "corpus")) else []:
        d = os.path.join(HERE, "corpus", h)
        for f in os.listdir(d):
            if f.startswith("seed-"):
                os.unlink(os.path.join(d, f))


def read(*parts):
    p = os.path.join(*parts)
    return open(p, "rb").read() if os.path.exists(p) else None


# ---- parse: one byte picks the parser (fuzz_parse.c), the rest is the text -------------------
def parse_seeds():
    seeds = {
        0: ["4096", "8GB", "1TiB", "4096MB", "0", "18014398509481984", "4 gigs"],
        1: ["1048576", "512K", "10MB", "1G", "0B"],
        2: ["50", "250", "100%", "0", "102401"],
        3: ["0-3", "1,3,5", "0-1,4", "1023", "0-", "3-1", "0-1023"],
        4: ["90", "30s", "30min", "2h30m", "1d", "0", "1x"],
        5: ["30min", "2026-11-22T15:04:05Z", "2026-11-22T15:04:05+01:00", "2025-01-01T00:00:00Z", "3650d1s"],
        6: ["2026-11-22T15:04:05Z", "2026-11-22t15:04:05.123456-23:59", "2024-02-29T23:59:60Z", "2023-02-29T00:00:00Z",
            "0000-01-01T00:00:00+00:01", "9999-12-31T23:59:59-23:59"],
        7: ["KEY=VALUE", "_A1=", "1BAD=x", "=x", "NOEQUALS"],
        8: ["0", "007", "18446744073709551615", "18446744073709551616", "-1"],
        9: ["PATH", "_", "1A"],
    }
    for which, texts in seeds.items():
        for i, t in enumerate(texts):
            out("parse", f"{which}-{i}", bytes([which]) + t.encode())


# ---- jobreq_json: request bodies --------------------------------------------------------------
def jobreq_json_seeds():
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
    import test_request_schema as trs  # noqa: E402  (only its CASES table)
    for case, (_, _, fields, _, _, _) in trs.CASES.items():
        out("jobreq_json", case, json.dumps({"command": "true", **fields}))
    full = {
        "command": "python3", "args": ["train.py", "--epochs", "10"], "name": "train",
        "env": {"LOG_LEVEL": "debug"}, "secret_env": {"TOKEN": "s3cr3t"}, "workdir": "/work/src",
        "network": "none", "max_cpu": 250, "max_memory_mb": 4096, "max_iobps": 1048576, "cpu_cores": "0-1",
        "max_runtime_s": 3600, "schedule_at": "2026-11-22T15:04:05Z",
        "uploads": [{"path": "src", "type": "dir", "mode": 493},
                    {"path": "src/train.py", "type": "file", "mode": 420, "content_b64": "cHJpbnQoMSkK"},
                    {"path": "src/link", "type": "symlink", "target": "train.py"}],
        "gpu_count": 2, "gpu_memory_mb": 16384, "gpu_caps": "compute,utility", "gpu_optional": False,
        "priority": 10, "gpu_type": "A100", "gpu_cc": "8.0", "gpu_share": False, "cross_numa": True,
        "preemptible": True, "volumes": ["data", "models:ro"],
    }
    out("jobreq_json", "full", json.dumps(full))
    out("jobreq_json", "gpu-ids", json.dumps({"command": "nvidia-smi", "gpu_ids": ["0", "GPU-6c22e95d"],
                                               "gpu_mig": "3g.40gb"}))
    out("jobreq_json", "gpu-all", json.dumps({"command": "x", "gpu_all": True, "runtime": "python-3.11"}))
    out("jobreq_json", "stored", json.dumps({"command": "x", "pids_max": 4096, "max_log_bytes": 1 << 30,
                                             "user_pids_max": 4096, "gpu_degraded": "",
                                             "uploads": [{"path": "a", "type": "file", "mode": "0644",
                                                          "size": 3}]}))
    out("jobreq_json", "unknown-field", json.dumps({"command": "x", "gpus": 2}))
    out("jobreq_json", "not-object", "[1, 2]")


# ---- jobreq_text: <field byte><text>\0 ... ----------------------------------------------------
def jobreq_text_seeds():
    # the harness's field numbers: jobreq_fields in table order, without the daemon's own fields
    # and uploads (fuzz_jobreq_text.c); the table order of jobreq.h:
    keys = ["command", "args", "name", "env", "secret_env", "workdir", "network", "max_cpu", "max_memory_mb",
            "max_iobps", "cpu_cores", "max_runtime_s", "schedule_at", "gpu_count", "gpu_memory_mb",
            "gpu_all", "gpu_ids", "gpu_caps", "gpu_optional", "gpu_mig", "priority", "gpu_type", "gpu_cc",
            "gpu_share", "cross_numa", "preemptible", "runtime", "volumes"]
    k = {name: i for i, name in enumerate(keys)}

    def rec(*pairs):
        return b"".join(bytes([k[f]]) + v.encode() + b"\0" for f, v in pairs)

    out("jobreq_text", "simple", rec(("command", "echo"), ("args", "hello"), ("name", "greet")))
    out("jobreq_text", "resources", rec(("command", "python3"), ("max_cpu", "50%"), ("max_memory_mb", "8GB"),
                                        ("max_iobps", "10MB"), ("cpu_cores", "0-1"), ("max_runtime_s", "2h30m")))
    out("jobreq_text", "gpu", rec(("command", "x"), ("gpu_count", "all"), ("gpu_memory_mb", "16GB"),
                                  ("gpu_caps", "compute,utility"), ("gpu_cc", "8.0"), ("gpu_type", "A100"),
                                  ("gpu_optional", "yes"), ("gpu_share", "true"), ("gpu_mig", "3g.40gb")))
    out("jobreq_text", "gpu-ids", rec(("command", "x"), ("gpu_ids", "0,1,GPU-6c22e95d"), ("priority", "-1000")))
    out("jobreq_text", "env", rec(("command", "x"), ("env", "A=1"), ("secret_env", "TOKEN=x"), ("env", "A=2")))
    out("jobreq_text", "schedule", rec(("command", "x"), ("schedule_at", "30min")))
    out("jobreq_text", "schedule-time", rec(("command", "x"), ("schedule_at", "2026-11-22T15:04:05+01:00")))
    out("jobreq_text", "misc", rec(("command", "x"), ("workdir", "/work/src"), ("network", "host"),
                                   ("cross_numa", "no"), ("preemptible", "false"), ("runtime", "python-3.11"),
                                   ("volumes", "data"), ("volumes", "models:ro")))


# ---- srun: a step's words inside a job (fuzz_srun.c) ----------------------------------------------
def srun_seeds():
    out("srun", "step", "-l\n-n\n1\n-N1\n-c\n4\n--gpus=1\n--mem=1G\n-o\nout_%j_%3t.txt\n--open-mode=append\n"
        "--export=NONE,A=1,B\n-D\n/work\npython\ntrain.py\n")
    out("srun", "refused", "-n\n2\n--multi-prog\n--gres=gpu:a100:3,tmpfs:1\n--foo\n-lu\n%x%u%A_%a%%%q%\n")
    out("srun", "patterns", "-e\n%N.%n.%s.%J.%20a\n-i\nnone\n--\n-x\n")
    out("srun", "hostlist", "node[01-03,7]-ib,gpu5,[8-9]\nr[1-2]n[1-2]\nn[3-1\n")


# ---- sbatch: scripts written for Slurm (fuzz_sbatch.c) -----------------------------------------
def sbatch_seeds():
    out("sbatch", "sweep", "#!/bin/bash\n#SBATCH --job-name=sweep\n#SBATCH --array=0-99%8\n#SBATCH -t 1-02:30 # c\n"
                           "#SBATCH --mem=8G -c 4\n#SBATCH --gres=gpu:a100:2,shard:1\n# SBATCH --off\n"
                           "#SBATCH --dependency=afterok:123 --signal=B:USR1@120\necho $SLURM_ARRAY_TASK_ID\n")
    out("sbatch", "notes", "#!/bin/sh -l\n#SBATCH -p gpu -A proj -q high -o out-%j.txt -e err --mail-type=END\n"
                           "#SBATCH --export=ALL,A=1,B --nice=10 --begin=now+2hours -D /work/x\n")
    out("sbatch", "times", "#!/bin/sh\n#SBATCH --time=UNLIMITED --mem-per-gpu=1G -G v100:2 --begin=2026-12-24T18:00\n"
                           "#SBATCH --mem-per-cpu=100 --priority=5 -N 1 -n 1 --runtime=x --network=bridge --gpu-share\n")
    out("sbatch", "command-line", "-J\nother\n--time=5:00\n--export=NONE,X=1\n--gpus=2\n--runtime=y\n-c2\njob.sh\n\0"
                                  "#!/bin/sh\n#SBATCH -J a --time=10 --export=A=1 --runtime=x --gpus=v100:1\n")
    out("sbatch", "quoted", "#!/bin/sh\n#SBATCH -J 'a b' --comment=\"x y\" --begin=teatime\n\n#SBATCH --upload=d/\n")


# ---- wfparse: workflow files ------------------------------------------------------------------
def wfparse_seeds():
    ex = os.path.join(ROOT, "examples")
    for f in sorted(os.listdir(ex)):
        if f.endswith(".yaml"):
            out("wfparse", f, read(ex, f))
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
    import test_workflow_invalid as twi  # noqa: E402
    for i, (text, _) in enumerate(twi.MALFORMED):
        out("wfparse", f"malformed-{i}", text)
    out("wfparse", "anchors", "name: anchors\ndefaults: &d\n  max_memory: 1GB\n  max_cpu: 50\njobs:\n"
                              "  a:\n    command: python3\n    args: [a.py]\n    resources:\n      <<: *d\n"
                              "  b:\n    command: python3\n    resources: *d\n    requires:\n      - a: COMPLETED\n"
                              "    environment: {A: '1', B: \"two\"}\n    secret_environment:\n      T: |\n"
                              "        block\n    uploads: [a.py, data/]\n")


# ---- ldcache: loader caches in glibc's layout --------------------------------------------------
def ldcache(entries, old=False, ext=True, flags_byte=2):
    """entries: (name, path, flags). Strings are tail-merged as glibc >= 2.33 writes them."""
    n = len(entries)
    strings = b""
    offs = {}
    hdr_at = 0
    if old:
        old_hdr = b"ld.so-1.7.0\0" + struct.pack("<I", n)
        old_len = len(old_hdr) + 12 * n
        hdr_at = (old_len + 7) & ~7
    str_base = 48 + 24 * n  # string offsets count from the new header
    for name, path, _ in entries:
        for s in (path, name):
            b = s.encode() + b"\0"
            if s in offs:
                continue
            merged = strings.find(b)
            if merged >= 0:
                offs[s] = str_base + merged
            else:
                offs[s] = str_base + len(strings)
                strings += b
    body = b"".join(struct.pack("<iIIIQ", fl, offs[name], offs[path], 0, 0) for name, path, fl in entries)
    new_len = 48 + len(body) + len(strings)
    ext_blob = b""
    ext_off = 0
    if ext:
        gen = b"ldconfig (GNU libc) stable release version 2.36"
        ext_off = (hdr_at + new_len + 3) & ~3
        pad = ext_off - (hdr_at + new_len)
        sec_off = ext_off + 8 + 16
        ext_blob = b"\0" * pad + struct.pack("<II", 0xEAA42174, 1) + struct.pack("<IIII", 0, 0, sec_off, len(gen)) + gen
    hdr = (b"glibc-ld.so.cache" + b"1.1" + struct.pack("<II", n, len(strings)) + bytes([flags_byte, 0, 0, 0]) +
           struct.pack("<IIII", ext_off, 0, 0, 0))
    blob = hdr + body + strings + ext_blob
    if old:
        old_entries = b"".join(struct.pack("<iII", 1, 0, 0) for _ in entries)
        pre = old_hdr + old_entries
        blob = pre + b"\0" * (hdr_at - len(pre)) + blob
    return blob


def ldcache_seeds():
    lib = "/usr/lib/x86_64-linux-gnu/"
    x86 = 0x0303
    ents = [("libcuda.so.1", lib + "libcuda.so.1", x86), ("libcuda.so", lib + "libcuda.so", x86),
            ("libnvidia-ml.so.1", lib + "libnvidia-ml.so.1", x86), ("libc.so.6", lib + "libc.so.6", x86),
            ("libcuda.so.1", "/usr/lib/i386-linux-gnu/libcuda.so.1", 0x0003),
            ("ld-linux-x86-64.so.2", lib + "ld-linux-x86-64.so.2", x86)]
    out("ldcache", "new", ldcache(ents))
    out("ldcache", "new-no-ext", ldcache(ents[:3], ext=False, flags_byte=0))
    out("ldcache", "old-and-new", ldcache(ents, old=True))
    out("ldcache", "empty", ldcache([], ext=False))
    out("ldcache", "old-only", b"ld.so-1.7.0\0" + struct.pack("<I", 1) + struct.pack("<iII", 1, 0, 0))
    out("ldcache", "big-endian", ldcache(ents[:1], flags_byte=3))


# ---- gpu_proc / gpu_smi: the fixture machines' /proc files and nvidia-smi outputs ----------------
Q_KEYS = ("CUDA Version", "Minor Number", "MIG Devices", "MIG Device", "GPU Instance ID", "Compute Instance ID",
          "FB Memory Usage", "Total", "Driver Version")


def trim_q(text):
    """nvidia-smi -q without the lines the parser ignores: sections and the keys it reads."""
    keep = []
    for line in text.splitlines():
        body = line.strip()
        key = body.split(":", 1)[0].strip()
        if line.startswith("GPU ") or key in Q_KEYS or (body and ":" not in body and len(line) - len(line.lstrip()) <= 8):
            keep.append(line)
    return "\n".join(keep) + "\n"


def gpu_seeds():
    for m in MACHINES:
        v = read(FIXTURES, m, "proc", "driver", "nvidia", "version")
        if v:
            out("gpu_proc", f"{m}-version", v)
        gdir = os.path.join(FIXTURES, m, "proc", "driver", "nvidia", "gpus")
        if os.path.isdir(gdir):
            for bus in sorted(os.listdir(gdir))[:2]:
                info = read(gdir, bus, "information")
                if info:
                    out("gpu_proc", f"{m}-{bus.replace(':', '_')}", info)
        smi = os.path.join(FIXTURES, m, "smi")
        parts = [read(smi, f) for f in ("query-gpu.csv", "q.txt", "L.txt", "topo-m.txt", "topo-mp.txt")]
        if all(parts):
            parts[1] = trim_q(parts[1].decode()).encode()
            for t in (3, 4):  # topo: the parser stops at the legend
                parts[t] = parts[t].split(b"Legend")[0] + b"Legend:\n"
            out("gpu_smi", m, b"\0".join(parts))
    out("gpu_proc", "open-module", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.129.03  "
                                   "Release Build  (dvs-builder@U16-T02-35-3)  Thu Oct 19 18:56:32 UTC 2023\n")


# ---- mountinfo ------------------------------------------------------------------------------------
def mountinfo_seeds():
    out("mountinfo", "typical",
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
        "23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
        "24 22 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
        "25 24 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
        "26 22 0:24 / /dev/shm rw,nosuid,nodev shared:3 - tmpfs tmpfs rw,size=65536k\n")
    out("mountinfo", "hybrid",
        "30 25 0:26 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw\n"
        "31 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:11 - cgroup cgroup rw,cpu,cpuacct\n"
        "32 25 0:28 /docker/abc /sys/fs/cgroup/memory rw master:5 propagate_from:3 - cgroup cgroup rw,memory\n")
    out("mountinfo", "escapes",
        "40 22 0:40 /a\\040b /mnt/with\\040space\\011tab rw unbindable - fuse.sshfs user@host:/x\\134y rw\n"
        "41 22 0:41 / /empty\\040source rw - tmpfs  rw,size=1k\n"
        "42 22 0:42 / /bad\\400 rw - tmpfs x rw,opt=a\\054b\n")
    try:
        with open("/proc/self/mountinfo", "rb") as f:
            out("mountinfo", "this-machine", b"".join(f.readlines()[:20]))
    except OSError:
        pass


# ---- spec: the job spec as spec_to_fd writes it -------------------------------------------------
def spec_seeds():
    full = {
        "id": "0b5f0c1e-8a4e-4f7e-9a51-3c1d2e4f5a6b", "job_dir": "/var/lib/joblet/jobs/0b5f0c1e", "work_dir": "/var/lib/joblet/work/1000/0b5f0c1e",
        "root_mount": "/var/lib/joblet/rootfs", "hostname": "0b5f0c1e", "workdir": "/work",
        "system_root": "/var/lib/joblet/runtimes/python-3.11/root", "cgroup_root": "/sys/fs/cgroup/joblet.slice",
        "argv": ["/bin/sh", "-c", "echo \"$TOKEN\""], "env": ["PATH=/usr/bin:/bin", "HOME=/work", "TOKEN=s3cr3t"],
        "uid": 1000, "gid": 1000, "net_host": False, "max_runtime_s": 3600, "stop_grace_s": 10,
        "tmp_size_mb": 64, "log_max_bytes": 1073741824, "user_procs_max": 4096,
        "limits": {"cpu_pct": 250, "mem_bytes": 4294967296, "swap_bytes": 0, "pids_max": 4096,
                   "io_bps": 1048576, "io_dev": "8:0", "cpus": "0-1", "mems": "0"},
        "devices": [{"type": "c", "major": 195, "minor": 0, "access": "rw"},
                    {"type": "b", "major": -1, "minor": -1, "access": "r"}],
        "mounts": [{"src": "/usr/lib/x86_64-linux-gnu/nvidia", "dst": "/usr/lib/x86_64-linux-gnu/nvidia",
                    "rw": False}],
        "ops": [{"op": "devnode", "src": "/dev/nvidia0", "dst": "/dev/nvidia0", "major": 195, "minor": 0},
                {"op": "tmpfs", "dst": "/proc/driver/nvidia"},
                {"op": "file", "dst": "/proc/driver/nvidia/version", "data": "NVRM version: 550.54\n"},
                {"op": "symlink", "src": "libcuda.so.550.54", "dst": "/usr/lib/x86_64-linux-gnu/libcuda.so.1"},
                {"op": "readonly", "dst": "/proc/driver/nvidia"}],
    }
    out("spec", "full", json.dumps(full))
    minimal = {k: full[k] for k in ("id", "job_dir", "work_dir", "root_mount", "hostname", "workdir", "cgroup_root", "argv",
                                    "env", "uid", "gid", "limits")}
    minimal["limits"] = {"cpu_pct": 0, "mem_bytes": 0, "io_dev": "", "cpus": "", "mems": ""}
    out("spec", "minimal", json.dumps(minimal))
    out("spec", "empty", b"")


# ---- logrecord: two control bytes, then a job's output (fuzz_logrecord.c) ----------------------
def logrecord_seeds():
    out("logrecord", "lines", b"\x07\x00hello\nworld\npartial")
    out("logrecord", "capped", b"\x03\x01" + b"line of output\n" * 60)
    out("logrecord", "records", b"\x00\x00" + b"1767225600000000000 F hello\n1767225600000000001 P wor\n"
                                b"garbage\n1767225600000000002 F ld\n")
    out("logrecord", "binary", b"\x11\x00\x00\x01\x02\xff\n\r\n\x1b[31mred\x1b[0m\n")


# ---- jsonscan: three bytes of limits (fuzz_jsonscan.c), then a JSON text ------------------------
def jsonscan_seeds():
    wide = bytes([0xff, 0xff, 0xff])   # depth 8, strings 31, 15 members and elements, 255 values
    texts = {
        "job": b'{"command": "python3", "args": ["train.py"], "env": {"A": "1"}, "max_cpu": 50, '
               b'"uploads": [{"path": "d", "type": "dir", "mode": 493}, {"path": "d/x", "size": 9}]}',
        "escapes": b'{"s": "a\\n\\u00e9\\u20ac\\ud83d\\ude00\\"", "k": "' + b"Q" * 40 + b'"}',
        "deep": b'{"a": ' + b"[" * 12 + b"]" * 12 + b"}",
        "tiny": b"[" + b",".join([b"{}"] * 40) + b"]",
        "scalars": b'[0, -1.5e+3, true, false, null, "", "x"]',
        "broken": b'{"a": [1, 2}',
        "loose": b'[tru, 01, "\\x"]',
    }
    for name, t in texts.items():
        out("jsonscan", name, wide + t)
    out("jsonscan", "tight", bytes([0x0b, 0x33, 0x40]) + texts["job"])


# ---- json_items: one byte, the level an item is printed at (fuzz_json_items.c), then the item --
def json_items_seeds():
    texts = {
        "job": b'{"id": "3f2a", "status": "COMPLETED", "args": ["x y", "q\\"], "exit_code": 0, "gpus": [],'
               b' "r": -1.5e+3, "n": null, "t": true}',
        "escapes": b'"a\n\u00e9\u20ac\ud83d\ude00\"\/"',
        "utf8": '"caf\u00e9 é € 😀"'.encode(),
        "deep": b"[" * 30 + b"]" * 30,
        "numbers": b"[0, -0, 9223372036854775807, 9223372036854775808, 1e308, 1e309, 1e-400, 0.5E-3]",
        "nul": b'["\u0000", "\ud800", "\udc00x"]',
        "broken": b'{"a": [1, 2}',
    }
    for name, t in texts.items():
        for level in (0, 1):
            out("json_items", f"{name}-{level}", bytes([level]) + t)


# ---- routes: requests through the route table (fuzz_routes.c) -----------------------------------
def routes_seeds():
    methods = {"GET": 0, "POST": 1, "DELETE": 2, "HEAD": 5, "PUT": 6}
    callers = {"root": 0, "user": 1, "nobody": 2}

    def req(method, path, body=None, who="root"):
        ctl = 0x20 | methods[method] | callers[who] << 3
        b = bytes([ctl]) + path.encode()
        if body is not None:
            b += b"\n" + (body if isinstance(body, bytes) else json.dumps(body).encode())
        return b

    def seq(*reqs):
        return b"\0".join(reqs)

    wf = {"name": "diamond", "source": "flows/diamond.yaml",
          "yaml": "jobs:\n  fetch:\n    command: 'true'\n",
          "jobs": [{"name": "fetch", "requires": [], "request": {"command": "true"}},
                   {"name": "left", "requires": [{"job": "fetch", "status": "COMPLETED"}],
                    "request": {"command": "false"}},
                   {"name": "right", "requires": [{"job": "fetch", "status": "COMPLETED"}],
                    "request": {"command": "echo", "args": ["r"], "gpu_count": 1}},
                   {"name": "report", "requires": [{"job": "left", "status": "FAILED"},
                                                   {"job": "right", "status": "COMPLETED"}],
                    "request": {"command": "echo", "secret_env": {"TOKEN": "s3cr3t"}}}]}
    out("routes", "version", req("GET", "/v1/version"))
    out("routes", "submit-logs-delete", seq(
        req("POST", "/v1/jobs", {"command": "echo", "args": ["hello", "world"], "name": "greet"}),
        req("GET", "/v1/jobs/{job}/logs?stream=stdout"),
        req("GET", "/v1/jobs/{job}/logs?follow=1&stream=all"),
        req("GET", "/v1/jobs/{job}/logs?format=frames&tail=1&since=2026-01-01T00:00:00.5Z"),
        req("GET", "/v1/jobs/{job}/logs?format=raw&stream=stdout"),
        req("GET", "/v1/jobs/{job}/logs?format=ndjson&tail=0"),
        req("GET", "/v1/jobs/{job}/metrics"),
        req("GET", "/v1/jobs?status=COMPLETED"),
        req("DELETE", "/v1/jobs/{job}")))
    out("routes", "gpu-job", seq(
        req("POST", "/v1/jobs", {"command": "nvidia-smi", "gpu_count": 2, "gpu_memory_mb": 1024,
                                 "uploads": [{"path": "a.py", "content_b64": "cHJpbnQoMSkK"}]}, who="user"),
        req("GET", "/v1/jobs/{job}", who="user"),
        req("GET", "/v1/jobs/{job}", who="nobody"),
        req("GET", "/v1/gpus"),
        req("GET", "/v1/audit?limit=5&gpu=0")))
    out("routes", "scheduled-cancel", seq(
        req("POST", "/v1/jobs", {"command": "sleep", "args": ["1"], "schedule_at": "2030-01-01T00:00:00Z"}),
        req("POST", "/v1/jobs/{job}/stop", b""),
        req("POST", "/v1/jobs/{job}/cancel", b""),
        req("DELETE", "/v1/jobs")))
    out("routes", "workflow", seq(
        req("POST", "/v1/workflows?dry_run=1", wf),
        req("POST", "/v1/workflows", wf, who="user"),
        req("GET", "/v1/workflows/{wf}", who="user"),
        req("POST", "/v1/workflows/{wf}/cancel", b"", who="user"),
        req("GET", "/v1/workflows", who="user")))
    out("routes", "gpu-admin", seq(
        req("POST", "/v1/gpus/0/drain", {"force": True}),
        req("POST", "/v1/gpus/1/offline", b""),
        req("POST", "/v1/gpus/1/online", b"", who="user"),
        req("GET", "/v1/gpus/GPU-nonexistent"),
        req("GET", "/v1/audit?user=root&since=2020-01-01T00:00:00Z&until=2099-01-01T00:00:00Z")))
    out("routes", "streamed-upload", seq(
        req("POST", "/v1/jobs", {"command": "sh", "args": ["a.py"], "uploads": [
            {"path": "src", "type": "dir"}, {"path": "src/a.py", "size": 6, "mode": 420},
            {"path": "src/b", "size": 0}, {"path": "src/l", "type": "symlink", "target": "a.py"}]}, who="user"),
        bytes([0x20 | 6 | 1 << 3 | 0x40]) + b"/v1/uploads/{upload}\nhello\n",
        req("GET", "/v1/jobs/{job}/logs", who="user"),
        req("DELETE", "/v1/jobs/{job}", who="user")))
    out("routes", "volume", seq(
        req("POST", "/v1/volumes", {"name": "scratch", "type": "memory", "size_mb": 64}, who="user"),
        req("GET", "/v1/volumes", who="user"),
        req("POST", "/v1/jobs", {"command": "true", "volumes": ["scratch:ro"]}, who="user"),
        req("POST", "/v1/volumes", {"name": "disk", "type": "filesystem", "size_mb": 1024}),
        req("DELETE", "/v1/volumes/scratch", who="nobody"),
        req("GET", "/v1/runtimes")))
    wfv = dict(wf, volumes=[{"name": "shared", "type": "memory", "size_mb": 32}])
    wfv["jobs"] = [dict(j, request=dict(j["request"], volumes=["shared"])) for j in wf["jobs"]]
    out("routes", "workflow-volume-upload", seq(
        req("POST", "/v1/workflows", wfv, who="user"),
        req("POST", "/v1/workflows", {"name": "up", "jobs": [
            {"name": "a", "request": {"command": "true", "uploads": [{"path": "x", "size": 3}]}},
            {"name": "b", "requires": [{"job": "a", "status": "COMPLETED"}],
             "request": {"command": "true", "uploads": [{"path": "y", "size": 2}]}}]}),
        bytes([0x20 | 6]) + b"/v1/uploads/{upload}\nabcde",
        req("GET", "/v1/workflows/{wf}")))
    out("routes", "metrics", seq(req("GET", "/metrics"), req("GET", "/metrics", who="user"),
                                 req("GET", "/v1/monitor")))
    out("routes", "bad", seq(req("POST", "/v1/jobs", b"{\"command\": \"x\", \"command\": \"y\"}"),
                             req("POST", "/v1/jobs", b"[1,"), req("PUT", "/v1/jobs"),
                             req("GET", "/v1/nope"), req("POST", "/v1/workflows", b"{}")))
    # bodies past the bounds of body.c: nesting, a long string, many tiny values, a small route's
    out("routes", "bounds", seq(req("POST", "/v1/jobs", b'{"command": "true", "args": ' + b"[" * 40 + b"]" * 40 + b"}"),
                                req("POST", "/v1/jobs", b'{"command": "' + b"x" * 5000 + b'"}'),
                                req("POST", "/v1/workflows", b'{"jobs": [' + b",".join([b"{}"] * 600) + b"]}"),
                                req("POST", "/v1/volumes", b'{"name": "v", "size_mb": 1, "x": [' + b"0," * 20 + b"0]}"),
                                req("POST", "/v1/gpus/0/drain", b'{"force": [[[[[true]]]]]}')))


if __name__ == "__main__":
    clean()
    parse_seeds()
    jobreq_json_seeds()
    jsonscan_seeds()
    json_items_seeds()
    jobreq_text_seeds()
    sbatch_seeds()
    srun_seeds()
    wfparse_seeds()
    ldcache_seeds()
    gpu_seeds()
    mountinfo_seeds()
    spec_seeds()
    logrecord_seeds()
    routes_seeds()
    for h in sorted(os.listdir(os.path.join(HERE, "corpus"))):
        d = os.path.join(HERE, "corpus", h)
        files = os.listdir(d)
        print(f"{h}: {len(files)} files, {sum(os.path.getsize(os.path.join(d, f)) for f in files)} bytes")
