"""rnx console's link file (docs/console.md, "Signing in"): a page of the user's only, mode 0600,
that sends the browser on to the tokened URL, so that `chromium FILE` puts no token on a command
line (/proc/PID/cmdline: every local user reads it and could redeem the token first). Where it
goes ($XDG_RUNTIME_DIR of the user's, else ~/.local/share/joblet made 0700, else none, said why),
that it goes when the console ends, and chromium, run as the user on the file, signed in."""
import os
import shutil
import signal
import stat
import subprocess
import tempfile

import pytest

from conftest import wait_for
from console_util import Console

UID = 4331
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture
def user_dirs():
    """Directories of uid UID under /tmp (the test's own tmp_path is root's, 0700): make(mode)
    gives a new one, owned by UID; all removed after."""
    made = []

    def make(mode=0o700, uid=UID):
        d = tempfile.mkdtemp(prefix="jl-consolefile-")
        os.chown(d, uid, uid)
        os.chmod(d, mode)
        made.append(d)
        return d
    yield make
    for d in made:
        shutil.rmtree(d, ignore_errors=True)


def env_of(**more):
    base = {"PATH": "/usr/bin:/bin", **{k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")}}
    return {**base, **{k: v for k, v in more.items() if v is not None}}


def ended(con, sig):
    """Sends sig to rnx console and waits for it to end: its exit status."""
    con.p.send_signal(sig)
    rc = con.p.wait(timeout=20)
    con.stop()
    return rc


def check_file(con, where):
    assert con.file and os.path.dirname(con.file) == where, (con.line, where)
    assert con.token not in con.file_uri and con.token not in con.file
    st = os.lstat(con.file)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == UID, oct(st.st_mode)
    page = open(con.file).read()
    assert f'<meta http-equiv="refresh" content="0;url={con.url}">' in page and f'<a href="{con.url}">' in page
    name = os.path.basename(con.file)
    assert name.startswith(f"joblet-console-{con.p.pid}-") and name.endswith(".html"), name


def test_the_file_is_the_users_only_and_goes_at_ctrl_c(daemon, user_dirs):
    run = user_dirs()
    con = Console(daemon, uid=UID, env=env_of(XDG_RUNTIME_DIR=run, HOME="/nonexistent"))
    try:
        check_file(con, run)
        # the file first, the link as the alternative
        lines = con.line.splitlines()
        assert lines[1].startswith("open this file in a browser: file:///") and con.url in lines[2], lines
        assert con.sign_in()                       # the link still works as printed
    finally:
        rc = ended(con, signal.SIGINT)
    assert rc == -signal.SIGINT, rc                # ended by the signal, as before
    assert not os.path.exists(con.file) and os.listdir(run) == []


def test_elsewhere_it_goes_to_a_private_directory_in_home(daemon, user_dirs):
    """XDG_RUNTIME_DIR that others may write to, or another user's (root's under sudo -E holds
    the user's: the same check of its owner, here a user with root's) is passed over for
    ~/.local/share/joblet, made 0700 (an existing one of the user's made 0700); files of consoles
    that are gone are removed, a live one's stay; SIGTERM removes the file."""
    home = user_dirs(0o755)
    for xdg in (user_dirs(0o777), user_dirs(0o755, uid=0)):   # (open to it: refused for its owner)
        con = Console(daemon, uid=UID, env=env_of(XDG_RUNTIME_DIR=xdg, HOME=home))
        try:
            mine = os.path.join(home, ".local", "share", "joblet")
            check_file(con, mine)
            st = os.stat(mine)
            assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == UID
            assert os.listdir(xdg) == []
        finally:
            assert ended(con, signal.SIGTERM) == -signal.SIGTERM
        assert not os.path.exists(con.file)
        os.chmod(mine, 0o755)
    # a killed console's file (its PID gone) is removed by the next one; a live PID's is not
    dead = subprocess_pid_gone()
    left = os.path.join(mine, f"joblet-console-{dead}-0123456789abcdef.html")
    live = os.path.join(mine, f"joblet-console-{os.getpid()}-0123456789abcdef.html")
    for f in (left, live):
        open(f, "w").close()
    con = Console(daemon, uid=UID, env=env_of(HOME=home))
    try:
        check_file(con, mine)
        assert not os.path.exists(left) and os.path.exists(live)
    finally:
        con.stop()
    os.unlink(live)


def subprocess_pid_gone():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_without_a_private_directory_only_the_link_and_why(daemon, user_dirs, tmp_path):
    """HOME unset, HOME not writable, ~/.local/share/joblet a symbolic link (not followed, its
    target untouched): the console starts, prints the link and says why there is no file."""
    ro = user_dirs(0o755, uid=0)
    home = user_dirs(0o755)
    os.makedirs(os.path.join(home, ".local", "share"))
    target = user_dirs(0o755)
    os.symlink(target, os.path.join(home, ".local", "share", "joblet"))
    for env, why in [(env_of(), "HOME is not set"),
                     (env_of(HOME=ro), f"cannot make {ro}/.local: Permission denied"),
                     (env_of(HOME=home), f"{home}/.local/share/joblet: Not a directory")]:
        con = Console(daemon, uid=UID, env=env)
        try:
            assert con.file is None and "XDG_RUNTIME_DIR is not set" in con.line and why in con.line, con.line
            assert "paste this link into the browser's address bar" in con.line
            assert con.sign_in()
        finally:
            assert ended(con, signal.SIGINT) == -signal.SIGINT
    assert os.listdir(target) == [] and os.listdir(ro) == []


def test_root_under_sudo_E_leaves_the_users_home_alone(daemon, user_dirs):
    """sudo -E keeps the user's HOME as well as their XDG_RUNTIME_DIR. root passed over the
    XDG_RUNTIME_DIR (not its own) but walked the user's HOME and made ~/.local/share/joblet
    there, root's, 0700: a file no browser of the user's can open, in a directory that made each
    later console of the user's say "not a directory of uid N's" and print no file. A HOME that
    is another user's (neither the caller's nor root's) is passed over too now: no file, said
    why, nothing made in it."""
    run, home = user_dirs(), user_dirs(0o755)
    con = Console(daemon, env=env_of(XDG_RUNTIME_DIR=run, HOME=home))
    try:
        assert con.file is None, (con.line, os.listdir(home))
        assert f"HOME {home} is uid {UID}'s" in con.line and "paste this link" in con.line, con.line
        assert con.sign_in()
    finally:
        assert ended(con, signal.SIGINT) == -signal.SIGINT
    assert os.listdir(home) == [] and os.listdir(run) == []
    # the user's own console there still gets its file
    con = Console(daemon, uid=UID, env=env_of(HOME=home))
    try:
        check_file(con, os.path.join(home, ".local", "share", "joblet"))
    finally:
        con.stop()


def cmdlines():
    out = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    out[int(pid)] = f.read()
            except OSError:
                pass
    return out


@pytest.mark.skipif(not CHROMIUM or not DRIVER, reason="needs chromium and chromium-driver (scripts/install-deps.sh)")
def test_chromium_opened_on_the_file_signs_in_without_the_token_on_its_command_line(fresh_daemon, own_net, user_dirs,
                                                                                    tmp_path):
    pytest.importorskip("selenium")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def wait(drv, cond):
        return WebDriverWait(drv, 45, poll_frequency=0.1).until(cond)
    d = fresh_daemon()
    run, home = user_dirs(), user_dirs()
    con = Console(d, uid=UID, prefix=own_net.inside, env=env_of(XDG_RUNTIME_DIR=run, HOME=home))
    drv = None
    try:
        check_file(con, run)
        profile = os.path.join(home, "profile")
        os.mkdir(profile)       # the user's (chromedriver, root, would make it root's)
        os.chown(profile, UID, UID)
        # as a user would: `chromium FILE`, as the user, the file's path on its command line
        drv = own_net.browser(tmp_path, CHROMIUM, DRIVER, "--window-size=1280,800", "--disable-extensions",
                              f"--user-data-dir={profile}", uid=UID, home=home, url=con.file_uri)

        urls = []

        def console_tab(x):
            urls[:] = []
            for h in x.window_handles:
                x.switch_to.window(h)
                urls.append(x.current_url)
                if x.current_url.startswith(con.origin):
                    return h
        try:
            wait(drv, console_tab)
        except Exception:
            raise AssertionError(f"chromium's tabs: {urls}")
        try:
            wait(drv, lambda x: x.find_element(By.ID, "live").text == "live")
        except Exception:
            raise AssertionError(f"{drv.current_url}: {drv.find_element(By.TAG_NAME, 'body').text[:2000]}")
        assert drv.current_url == con.origin + "/"
        seen = cmdlines()
        assert any(con.file_uri.encode() in c for c in seen.values()), "chromium's command line not found"
        assert not [p for p, c in seen.items() if con.token.encode() in c]
    finally:
        if drv:
            drv.quit()
        assert ended(con, signal.SIGINT) == -signal.SIGINT
    assert not os.path.exists(con.file)


_BROWSER = """#!/bin/sh
# a stand-in for the user's browser: what it was started with, and how
{ printf '%s\\n' "$@"; echo "--"; awk '{print $5}' /proc/$$/stat; echo $$; readlink /proc/$$/fd/0; } > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
"""


def test_open_starts_the_browser_on_the_file_never_on_the_link(daemon, user_dirs):
    """--open starts $BROWSER (its first entry, words at blanks, the path added last) on the file,
    as the user, in a process group of its own (Ctrl-C in the terminal ends the console, not the
    browser), stdin /dev/null; it is reaped when it ends. Without a file it starts nothing and says
    why: the link never goes on a command line."""
    run, bin_ = user_dirs(), user_dirs(0o755)
    browser, out = os.path.join(bin_, "browser"), os.path.join(run, "opened")
    with open(browser, "w") as f:
        f.write(_BROWSER)
    os.chmod(browser, 0o755)
    con = Console(daemon, uid=UID, args=["--open"],
                  env=env_of(XDG_RUNTIME_DIR=run, HOME="/nonexistent", OUT=out,
                             BROWSER=f"{browser} --new-window:firefox"))
    try:
        wait_for(lambda: os.path.exists(out), "the browser stand-in to be started")
        args, how = open(out).read().split("--\n")
        assert args.splitlines() == ["--new-window", con.file], args
        assert con.token not in args
        pgrp, pid, stdin = how.split()
        assert pgrp == pid and int(pgrp) != os.getpgid(con.p.pid), how
        assert stdin == "/dev/null", how

        def zombies():
            kids = []
            for t in os.listdir(f"/proc/{con.p.pid}/task"):
                kids += open(f"/proc/{con.p.pid}/task/{t}/children").read().split()
            return [k for k in kids if open(f"/proc/{k}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"]
        wait_for(lambda: not zombies(), "the browser's exit to be reaped")
        assert con.sign_in()
    finally:
        con.stop()
    # no file: nothing started, and why
    os.unlink(out)
    con = Console(daemon, uid=UID, args=["--open"], env=env_of(OUT=out, BROWSER=browser))
    try:
        assert con.file is None and con.sign_in()
    finally:
        con.stop()
    assert not os.path.exists(out)
    assert ("--open: no file to open: XDG_RUNTIME_DIR is not set; HOME is not set; open the link by pasting it "
            "yourself") in con.err, con.err
