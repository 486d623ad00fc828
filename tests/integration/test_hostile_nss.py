"""A directory service slow for one account (LDAP, sssd away) must not make everyone wait.

joblet's loop is one thread; an account look-up (getpwuid and the like, through NSS) asked on
it held every user's requests for as long as the directory took (core/nsscache.h). Here the
daemon runs with a small LD_PRELOAD object that makes the look-ups of one uid (and one name)
take SLOW_NSS_SECONDS, writing "enter" and "leave" lines to a file around each, so the test
knows when the daemon is inside the slow look-up without touching the host's nsswitch.conf."""
import os
import subprocess
import threading
import time

import pytest

from conftest import api_as, need_setpriv, rnx_as, setpriv

SLOW_UID = 4391
FAST_UID = 4392
SLOW_S = 10   # (two client starts of another user fit in it under a whole run's load)

_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void note(const char *what, const char *fn)
{
    const char *path = getenv("SLOW_NSS_LOG");
    if (!path)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char line[128];
    int n = snprintf(line, sizeof line, "%s %s %.3f\n", what, fn, ts.tv_sec + ts.tv_nsec / 1e9);
    if (write(fd, line, (size_t)n) < 0) {}
    close(fd);
}

/* SLOW_NSS_UID_SECONDS, SLOW_NSS_NAME_SECONDS for the uid's, the name's, else SLOW_NSS_SECONDS:
 * seconds, fractions too */
static void slow(int hit, const char *fn, const char *which)
{
    if (!hit)
        return;
    const char *s = getenv(which);
    if (!s)
        s = getenv("SLOW_NSS_SECONDS");
    double d = s ? atof(s) : 2;
    note("enter", fn);
    struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
    while (nanosleep(&ts, &ts) < 0) {}
    note("leave", fn);
}

/* SLOW_NSS_UID: one uid, or a range A-B */
static int uid_hit(uid_t uid)
{
    const char *u = getenv("SLOW_NSS_UID");
    if (!u)
        return 0;
    const char *dash = strchr(u, '-');
    return dash ? (uid_t)atol(u) <= uid && uid <= (uid_t)atol(dash + 1) : (uid_t)atol(u) == uid;
}

static int name_hit(const char *name)
{
    const char *n = getenv("SLOW_NSS_NAME");
    return n && name && !strcmp(n, name);
}

#define REAL(name) static __typeof__(name) *real; if (!real) real = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

int getpwuid_r(uid_t uid, struct passwd *pw, char *buf, size_t len, struct passwd **out)
{
    REAL(getpwuid_r);
    slow(uid_hit(uid), "getpwuid_r", "SLOW_NSS_UID_SECONDS");
    return real(uid, pw, buf, len, out);
}

struct passwd *getpwuid(uid_t uid)
{
    REAL(getpwuid);
    slow(uid_hit(uid), "getpwuid", "SLOW_NSS_UID_SECONDS");
    return real(uid);
}

int getpwnam_r(const char *name, struct passwd *pw, char *buf, size_t len, struct passwd **out)
{
    REAL(getpwnam_r);
    slow(name_hit(name), "getpwnam_r", "SLOW_NSS_NAME_SECONDS");
    return real(name, pw, buf, len, out);
}

struct passwd *getpwnam(const char *name)
{
    REAL(getpwnam);
    slow(name_hit(name), "getpwnam", "SLOW_NSS_NAME_SECONDS");
    return real(name);
}

int getgrouplist(const char *user, gid_t group, gid_t *groups, int *ngroups)
{
    REAL(getgrouplist);
    slow(name_hit(user), "getgrouplist", "SLOW_NSS_NAME_SECONDS");
    return real(user, group, groups, ngroups);
}

int getgrnam_r(const char *name, struct group *g, char *buf, size_t len, struct group **out)
{
    REAL(getgrnam_r);
    slow(name_hit(name), "getgrnam_r", "SLOW_NSS_NAME_SECONDS");
    return real(name, g, buf, len, out);
}

struct group *getgrnam(const char *name)
{
    REAL(getgrnam);
    slow(name_hit(name), "getgrnam", "SLOW_NSS_NAME_SECONDS");
    return real(name);
}
"""


@pytest.fixture
def slow_nss(tmp_path):
    if os.environ.get("JOBLET_PASS") == "sanitizers":
        pytest.skip("LD_PRELOAD of the slow-NSS object would come before the ASan runtime, which must be first; "
                    "the code it exercises (core/nsscache.c) runs under the sanitizers in every other test")
    need_setpriv()
    src = tmp_path / "slow_nss.c"
    src.write_text(_SHIM)
    so = tmp_path / "slow_nss.so"
    p = subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(so), str(src), "-ldl"], capture_output=True,
                       text=True)
    if p.returncode:
        pytest.skip(f"cannot build the LD_PRELOAD object: {p.stderr[-400:]}")
    log = tmp_path / "nss.log"
    os.chmod(tmp_path, 0o755)
    return {"LD_PRELOAD": str(so), "SLOW_NSS_UID": str(SLOW_UID), "SLOW_NSS_NAME": "slow-nss-person",
            "SLOW_NSS_SECONDS": str(SLOW_S), "SLOW_NSS_LOG": str(log)}, log


def _lines(log):
    try:
        return log.read_text().split()
    except FileNotFoundError:
        return []


def test_slow_account_lookup_does_not_hold_other_users(fresh_daemon, slow_nss):
    """While uid SLOW_UID's request waits on its account's slow look-up, uid FAST_UID's
    GET /v1/version and rnx job list are answered before that look-up ends; the slow
    user's own request is answered after it."""
    env, log = slow_nss
    d = fresh_daemon(env=env)
    # the other user's account known already (a look-up of its own, fast)
    assert api_as(d, FAST_UID, "GET", "/v1/version")[0] == 200
    assert not _lines(log), "the slow look-up ran before the slow user asked"
    slow_answer = {}

    def slow_user():
        t = time.time()
        slow_answer["status"] = api_as(d, SLOW_UID, "GET", "/v1/whoami")
        slow_answer["s"] = time.time() - t

    th = threading.Thread(target=slow_user)
    th.start()
    try:
        deadline = time.time() + 30
        while "enter" not in _lines(log) and time.time() < deadline:
            time.sleep(0.02)
        assert "enter" in _lines(log), f"the daemon never looked up uid {SLOW_UID}\n{d.log()[-2000:]}"
        t = time.time()
        code, _ = api_as(d, FAST_UID, "GET", "/v1/version")
        version_s = time.time() - t
        version_before_leave = "leave" not in _lines(log)
        t = time.time()
        p = rnx_as(d, FAST_UID, "job", "list")
        list_s = time.time() - t
        list_before_leave = "leave" not in _lines(log)
    finally:
        th.join(timeout=120)
    print(f"while uid {SLOW_UID}'s look-up took {SLOW_S} s: uid {FAST_UID}'s GET /v1/version took {version_s:.3f} s, "
          f"rnx job list {list_s:.3f} s; the slow user's own whoami {slow_answer.get('s', -1):.3f} s")
    assert code == 200
    assert p.returncode == 0, p.stderr
    assert version_before_leave, (f"GET /v1/version of another user waited for uid {SLOW_UID}'s account look-up "
                                  f"({version_s:.3f} s)")
    assert list_before_leave, f"rnx job list of another user waited for uid {SLOW_UID}'s look-up ({list_s:.3f} s)"
    # the slow user is answered, once its look-up is done: with no account, no user name
    status, who = slow_answer["status"]
    assert status == 200 and who["uid"] == SLOW_UID and who.get("user") is None, who


def test_an_operator_whose_account_is_being_looked_up_is_not_refused_as_a_developer(fresh_daemon, slow_nss):
    """A request decided on before its body (a runtime import: an operator's) comes while the
    caller's account is still being looked up: its role (server.admin_group) is not known yet,
    and joblet must say so (503), not refuse it for the lesser role (403 "for admins"). rnx asks
    who it is first, so its import waits for the account and then goes through."""
    import grp
    try:
        staff = grp.getgrnam("staff").gr_gid
    except KeyError:
        pytest.skip("no group 'staff' to make an admin group of")
    env, log = slow_nss
    d = fresh_daemon("server:\n  admin_group: staff\n", env=env)
    operator = (SLOW_UID, staff)  # an operator by its login group, once its account is known
    # one send of the headers and the small body, then the answer: joblet answers at the headers
    # and may close before it reads the body, which http.client would take for a broken pipe
    raw = ("import socket, sys\n"
           "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
           "body = b'not an archive'\n"
           "try:\n"
           "    s.sendall(b'POST /v1/runtime-imports HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/zstd\\r\\n'\n"
           "              b'Content-Length: %d\\r\\n\\r\\n' % len(body) + body)\n"
           "except BrokenPipeError:\n"
           "    pass\n"
           "out = b''\n"
           "while True:\n"
           "    b = s.recv(65536)\n"
           "    if not b: break\n"
           "    out += b\n"
           "    if b'\\r\\n\\r\\n' in out and out.rstrip().endswith(b'}'): break\n"
           "sys.stdout.write(out.decode())\n")
    p = subprocess.run([*setpriv(operator), "/usr/bin/python3", "-c", raw, d.sock], capture_output=True, text=True,
                       timeout=60)
    assert "enter" in _lines(log), "the account was never looked up"
    assert p.stdout.startswith("HTTP/1.1 503") and "looking up the account of uid" in p.stdout, (p.stdout, p.stderr)
    junk = os.path.join(d.dir, "junk.tar.zst")
    with open(junk, "wb") as f:
        f.write(b"not an archive either")
    os.chmod(d.dir, 0o755)
    os.chmod(junk, 0o644)
    time.sleep(SLOW_S + 3)  # the first look-up's answer, no account (kept 5 s), expired: asked again
    p = rnx_as(d, operator, "runtime", "import", junk)
    assert p.returncode != 0 and "for admins" not in p.stderr, p.stderr
    assert "the archive could not be extracted" in p.stderr, p.stderr
