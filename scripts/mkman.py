#!/usr/bin/env python3
"""mkman.py rnx|joblet BINARY OUTPUT VERSION: writes the man page rnx(1) or joblet(8) made
from the built binary's own --help, so the page says what the program says (meson runs it at
build time; data/meson.build).

rnx(1): NAME and SYNOPSIS from `rnx --help`, the overview of its commands, its global flags
(OPTIONS), then every command's help (COMMANDS): the command tree is the one `rnx completion
complete` reads from the same help. joblet(8): `joblet --help`. EXIT STATUS is the help's
"Exit status:" paragraph, ENVIRONMENT the $VARIABLES its options name, FILES the absolute
paths its options name; CERTIFICATES, `joblet cert --help` and each of its commands' help.

The help texts are plain text in rnx's style: a "NAME - summary" first line (the page's NAME),
"Usage:" lines, paragraphs at column 0, and indented entries "TERM  description" whose longer
descriptions continue on lines indented deeper; those become .TP paragraphs, nested ones inside
.RS/.RE. An indented line with no description (an example command line) is shown as it is.
"""
import os
import re
import subprocess
import sys
import time


def run(binary, *args):
    p = subprocess.run([binary, *args], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "JOBLET_SOCKET": "/nonexistent/joblet-mkman.sock"})
    if p.returncode != 0:
        sys.exit(f"mkman: {binary} {' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


# ---- roff -------------------------------------------------------------------------------

def esc(s):
    """Text for roff: backslashes and hyphens escaped, no line may start as a request."""
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + s if s[:1] in (".", "'") else s


def fmt_term(term):
    """A command line or an entry's term: flags and command words bold, PLACEHOLDERS italic,
    brackets and bars roman."""
    out = []
    for tok in re.findall(r"\[|\]|\||,\s*|\s+|\.\.\.|[^\s\[\]|,]+", term):
        if not tok.strip() or tok in ("[", "]", "|", "...") or tok.startswith(","):
            out.append(esc(tok))
        elif re.match(r"[A-Z][A-Z0-9_]*(\b|[=.:])", tok) or tok.startswith("<"):
            out.append("\\fI" + esc(tok) + "\\fR")
        else:
            # "--size=SIZE": the flag bold, its value italic
            m = re.match(r"(--?[\w-]+)(=)(.+)", tok)
            if m:
                out.append("\\fB" + esc(m.group(1)) + "\\fR=\\fI" + esc(m.group(3)) + "\\fR")
            else:
                out.append("\\fB" + esc(tok) + "\\fR")
    return "".join(out)


def indent(line):
    return len(line) - len(line.lstrip(" "))


# A term and its description, split at the first gap of two blanks or more; an option's value
# may be followed by one blank only ("--max-runtime DURATION stop the job after this long").
GAP = re.compile(r"^(\S.*?)(?: {2,}|$)(.*)$")
OPTION = re.compile(r"^((?:-\w, )?--?[\w-]+(?:\[?=\S+|\s(?=[A-Z]|\S*\|)\S+)?)(?: +|$)(.*)$")


def split_term(text):
    if text.startswith("-"):
        m = OPTION.match(text)
        if m:
            return m.group(1), m.group(2).strip()
    m = GAP.match(text)
    return m.group(1).rstrip(), m.group(2).strip()


def desc_columns(lines):
    """{indent: the column where most entries of that indent start their description}: a term
    as long as its column leaves one blank only ("  workflow status a workflow's state")."""
    seen = {}
    for line in lines:
        ind = indent(line)
        if not line.strip() or not ind:
            continue
        term, desc = split_term(line.strip())
        if desc:
            col = line.index(desc, ind + len(term))
            seen.setdefault(ind, {}).setdefault(col, 0)
            seen[ind][col] += 1
    return {ind: max(cols, key=cols.get) for ind, cols in seen.items()}


def render(lines, base=0):
    """roff for help lines, all indented base or more: prose at base, entries deeper."""
    out, i, n = [], 0, len(lines)
    para = []
    columns = desc_columns(lines)

    def flush():
        if para:
            text = " ".join(para)
            if re.fullmatch(r"[A-Z][\w ]*:", text):
                out.append(".PP\n.B " + esc(text))
            else:
                out.append(".PP\n" + esc(text))
            para.clear()

    while i < n:
        line = lines[i].rstrip()
        if not line.strip():
            flush()
            i += 1
            continue
        ind = indent(line)
        if ind <= base:
            para.append(line.strip())
            i += 1
            continue
        flush()
        # an entry: the lines indented deeper than it continue it
        j = i + 1
        while j < n and lines[j].strip() and indent(lines[j]) > ind:
            j += 1
        text = line.strip()
        term, desc = split_term(text)
        col = columns.get(ind, 0)
        if not desc and len(line) > col > ind + 1 and line[col - 1] == " " and line[col] != " ":
            term, desc = line[ind:col].strip(), line[col:].strip()
        if not desc and j == i + 1 and not text.startswith("-"):
            # an example line: shown as it is, with the lines like it
            block = [text]
            while j < n and lines[j].strip() and indent(lines[j]) == ind and not split_term(lines[j].strip())[1]:
                block.append(lines[j].strip())
                j += 1
            out.append(".PP\n.RS\n.nf\n" + "\n".join(esc(b) for b in block) + "\n.fi\n.RE")
            i = j
            continue
        cont = lines[i + 1:j]
        col = indent(cont[0]) if cont else ind + 4
        body = ([" " * col + desc] if desc else []) + [l if indent(l) >= col else " " * col + l.strip() for l in cont]
        out.append(".TP\n" + fmt_term(term))
        inner = render(body, col)
        # the first paragraph of a .TP body is the tag's own; nested entries go in .RS/.RE
        inner = re.sub(r"^\.PP\n", "", inner)
        out.append(inner)
        i = j
    flush()
    # entries nested in an entry's description are indented once more
    text = "\n".join(o for o in out if o)
    if base > 0 and ".TP" in text:
        first_tp = text.index(".TP")
        text = text[:first_tp] + ".RS\n" + text[first_tp:] + "\n.RE"
    return text


def parse_help(text):
    """(name line, usage lines, the rest's lines) of a help text."""
    lines = text.rstrip("\n").split("\n")
    name = ""
    if lines and " - " in lines[0] and not lines[0].lower().startswith("usage:"):
        name = lines.pop(0)
    usage, rest, k = [], [], 0
    while k < len(lines) and not lines[k].strip():
        k += 1
    if k < len(lines) and lines[k].lower().startswith("usage:"):
        usage.append(lines[k][6:].strip())
        k += 1
        while k < len(lines) and lines[k].startswith(" ") and lines[k].strip():
            usage.append(lines[k].strip())
            k += 1
    rest = lines[k:]
    return name, usage, rest


def synopsis(usage):
    return "\n.br\n".join(fmt_term(u) for u in usage)


def split_sections(rest):
    """{header: lines} for the help's "Header:" sections at column 0, "" for the text before
    the first; the "Exit status:" paragraph as its own section."""
    secs, cur = {"": []}, ""
    for line in rest:
        if re.fullmatch(r"[A-Z][\w ]*:", line):
            cur = line[:-1]
            secs.setdefault(cur, [])
            continue
        if line.startswith("Exit status:"):
            cur = "Exit status"
            secs.setdefault(cur, [])
            line = line[len("Exit status:"):].strip()
        elif cur == "Exit status" and not line.strip():
            cur = ""
        secs[cur].append(line)
    return secs


def files_and_env(option_lines):
    """The absolute paths and $VARIABLES named by options: (files, env) as [(name, text)]."""
    files, env = [], []
    joined, entries = "", []
    for line in option_lines:
        if line.strip().startswith("-"):
            if joined:
                entries.append(joined)
            joined = line.strip()
        elif line.strip():
            joined += " " + line.strip()
    if joined:
        entries.append(joined)
    for e in entries:
        term, desc = split_term(e)
        flag = term.split()[0].split("=")[0].split("[")[0].rstrip(",")
        if term.startswith("-") and ", " in term:
            flag = term.split(", ")[1].split()[0]
        for path in re.findall(r"(?<![\w.])(/(?:[\w.-]+/)*[\w.-]+)", desc):
            if not any(p == path for p, _ in files):
                files.append((path, f"{flag}: {desc}"))
        for var in re.findall(r"\$([A-Z_][A-Z0-9_]*)", desc):
            if not any(v == var for v, _ in env):
                env.append((var, f"{flag}: {desc}"))
    return files, env


def tp_list(pairs):
    return "\n".join(f".TP\n.B {esc(a)}\n{esc(b)}" for a, b in pairs)


def header(name, section, version):
    date = ""
    if os.environ.get("SOURCE_DATE_EPOCH"):
        date = time.strftime("%Y-%m-%d", time.gmtime(int(os.environ["SOURCE_DATE_EPOCH"])))
    return (f'.\\" Generated by scripts/mkman.py from {name} --help; do not edit.\n'
            f'.TH {name.upper()} {section} "{date}" "joblet {version}" '
            f'"{"User Commands" if section == "1" else "System Administration"}"\n')


def name_section(name_line):
    prog, _, summary = name_line.partition(" - ")
    return f".SH NAME\n{esc(prog.strip())} \\- {esc(summary.strip())}\n"


# ---- rnx(1) -------------------------------------------------------------------------------

def rnx_subcommands(binary, *path):
    """The subcommands of rnx PATH as `rnx completion complete` gives them, [] for a command
    that has none."""
    out = run(binary, "completion", "complete", "--", "rnx", *path, "").split("\n")
    out = [l for l in out if l]
    if not out or out[-1] != ":commands":
        return []
    return [l.split("\t")[0] for l in out[:-1]]


def rnx_page(binary, version):
    top = run(binary, "--help")
    name, usage, rest = parse_help(top)
    secs = split_sections(rest)
    page = [header("rnx", "1", version), name_section(name)]
    page.append(".SH SYNOPSIS\n" + synopsis(usage))
    page.append(".SH DESCRIPTION\n"
                ".B rnx\nis the command-line client of\n.BR joblet (8):\n"
                "it sends each command to the daemon over its unix socket and prints the answer.\n"
                + render(secs.get("", [])))
    if "Commands" in secs:
        page.append(".SS Commands\n" + render(secs["Commands"]))
    options = secs.get("Global flags", [])
    page.append(".SH OPTIONS\n" + render(options))
    page.append(".SH COMMANDS")
    commands = rnx_subcommands(binary)
    if not commands:
        sys.exit("mkman: rnx completion complete lists no commands")
    for cmd in commands:
        ghelp = run(binary, cmd, "--help")
        page.append(command_section(["rnx", cmd], ghelp))
        for sub in rnx_subcommands(binary, cmd):
            shelp = run(binary, cmd, sub, "--help")
            if shelp != ghelp:   # a subcommand without help of its own is in its group's
                page.append(command_section(["rnx", cmd, sub], shelp))
    if "Exit status" in secs:
        page.append(".SH EXIT STATUS\n" + render(secs["Exit status"]))
    files, env = files_and_env(options)
    if env:
        page.append(".SH ENVIRONMENT\n" + tp_list(env))
    if files:
        page.append(".SH FILES\n" + tp_list(files))
    page.append(".SH SEE ALSO\n.BR joblet (8)")
    return "\n".join(page) + "\n", commands


def command_section(path, text):
    _, usage, rest = parse_help(text)
    body = [f'.SS "{esc(" ".join(path))}"']
    if usage:
        body.append(".PP\n" + synopsis(usage))
    body.append(render(rest))
    return "\n".join(b for b in body if b)


# ---- joblet(8) ----------------------------------------------------------------------------

def joblet_page(binary, version):
    name, usage, rest = parse_help(run(binary, "--help"))
    if not name:
        sys.exit("mkman: joblet --help has no 'joblet - summary' first line")
    secs = split_sections(rest)
    page = [header("joblet", "8", version), name_section(name)]
    page.append(".SH SYNOPSIS\n" + synopsis(usage))
    page.append(".SH DESCRIPTION\n" + render(secs.get("", [])))
    options = secs.get("Options", [])
    page.append(".SH OPTIONS\n" + render(options))
    # `joblet cert` and each of its commands (their names: the entries of its "Commands:")
    cert = run(binary, "cert", "--help")
    page.append(".SH CERTIFICATES")
    page.append(command_section(["joblet", "cert"], cert))
    for line in split_sections(parse_help(cert)[2]).get("Commands", []):
        if indent(line) == 2:
            sub = line.split()[0]
            page.append(command_section(["joblet", "cert", sub], run(binary, "cert", sub, "--help")))
    if "Exit status" in secs:
        page.append(".SH EXIT STATUS\n" + render(secs["Exit status"]))
    files, env = files_and_env(options)
    if env:
        page.append(".SH ENVIRONMENT\n" + tp_list(env))
    if files:
        page.append(".SH FILES\n" + tp_list(files))
    page.append(".SH SEE ALSO\n.BR rnx (1)")
    return "\n".join(page) + "\n"


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("rnx", "joblet"):
        sys.exit("usage: mkman.py rnx|joblet BINARY OUTPUT VERSION")
    which, binary, output, version = sys.argv[1:]
    text = rnx_page(binary, version)[0] if which == "rnx" else joblet_page(binary, version)
    tmp = output + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, output)


if __name__ == "__main__":
    main()
