"""A tiny runtime for tests of how a job's root is built from a runtime (docs/runtimes.md): a
merged-/usr tree holding Debian's static busybox and its applets, with a manifest, made in
milliseconds. Runtimes built from Debian packages are tested in test_runtimes.py."""
import os
import shutil

BUSYBOX = "/bin/busybox"
APPLETS = ["sh", "cat", "ls", "echo", "touch", "id", "env", "test", "true", "false", "mkdir", "rm", "dd", "df",
           "stat", "head", "wc", "sleep", "readlink", "grep"]


def make(runtimes_dir, name="busybox", env=None, marker="busybox runtime"):
    """<runtimes_dir>/<name>/{rootfs,manifest.yml}; returns the rootfs path."""
    root = os.path.join(runtimes_dir, name, "rootfs")
    for d in ("usr/bin", "usr/lib", "etc"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    shutil.copy2(BUSYBOX, os.path.join(root, "usr/bin/busybox"))
    for a in APPLETS:
        link = os.path.join(root, "usr/bin", a)
        if not os.path.lexists(link):
            os.symlink("busybox", link)
    for top, target in (("bin", "usr/bin"), ("sbin", "usr/bin"), ("lib", "usr/lib")):
        link = os.path.join(root, top)
        if not os.path.lexists(link):
            os.symlink(target, link)
    with open(os.path.join(root, "etc/marker"), "w") as f:
        f.write(marker + "\n")
    with open(os.path.join(root, "etc/passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\n")
    lines = [f"name: {name}", 'version: "1"', "description: busybox for tests", "architecture: amd64",
             "provides: [busybox 1.35]", "test: busybox true"]
    if env:
        lines.append("env:")
        lines += [f"  {k}: \"{v}\"" for k, v in env.items()]
    with open(os.path.join(runtimes_dir, name, "manifest.yml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return root
