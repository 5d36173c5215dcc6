#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/man-gen.py - libagile's section 3 pages from its headers' kernel-doc.

One page per symbol exported by libagile/src/libagile.map and
libagile/src/libagile-mpi.map (man/man3/<symbol>.3), the overview page
man/man3/libagile.3, and man/man4/agile.4 from man/agile.4.in with the
structs of uapi/linux/agile.h filled in.  The pages are checked in; make
lint (tools/check-man.sh) runs this with --check, which fails when a
checked-in page differs from what the headers give now.

  tools/man-gen.py            write the pages
  tools/man-gen.py --check    compare; list the stale or missing pages

A page's sections come from the kernel-doc comment before the prototype:
the summary line (NAME), the prototype (SYNOPSIS), the @arguments and
the body (DESCRIPTION), "Return:" (RETURN VALUE; the errno names in it,
with the parenthesised reason after each, make ERRORS), "Thread safety:"
(THREAD SAFETY; else the header's own Thread safety paragraph), and an
EXAMPLE from man/examples/<symbol>.c where there is one (make lint
compiles those).  agile__* symbols are the inline spawn/sync's internal
ABI: their page says so.
"""
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADERS = os.path.join(REPO, "libagile", "include", "agile")
MAPS = [("libagile", os.path.join(REPO, "libagile", "src", "libagile.map")),
        ("libagile-mpi",
         os.path.join(REPO, "libagile", "src", "libagile-mpi.map"))]
MAN = os.path.join(REPO, "man")
EXAMPLES = os.path.join(MAN, "examples")
UAPI = os.path.join(REPO, "uapi", "linux", "agile.h")

# The layers in the order of SPEC section 3, for the overview page.
LAYERS = [
    ("error.h", "common: error codes"),
    ("version.h", "common: version checks"),
    ("dev.h", "layer 1, dev: doorbells and task registers, /dev/agile or "
     "memfd+futex"),
    ("kernels.h", "layer 2, kernels: the registry of execution-unit kernels"),
    ("launch.h", "layer 2, kernels: grid launches on a thread pool"),
    ("eu.h", "layer 3, eu: execution-unit pools, CPU stand-ins or GPU "
     "work-groups"),
    ("gpu.h", "layer 3, eu: GPU discovery"),
    ("sched.h", "layer 4, sched: the cooperative work-stealing scheduler"),
    ("offload.h", "layer 4, sched: scheduler leaves offloaded to execution "
     "units"),
    ("coll.h", "layer 6, coll: collectives among threads and processes"),
    ("coll_mpi.h", "layer 6, coll: collectives among machines "
     "(libagile-mpi)"),
    ("segmap.h", "layer 7, segmap: segmented fields, tiles, forall"),
    ("segmap_mpi.h", "layer 7, segmap: segment maps among machines "
     "(libagile-mpi)"),
    ("runtime.h", "layer 8, runtime: devices, contexts, buffers, queues, "
     "events"),
]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def exported(path):
    """The global symbols of a version script, in order."""
    text = re.sub(r"/\*.*?\*/", "", read(path), flags=re.S)
    names = []
    for block in re.findall(r"global:(.*?)(?:local:|\})", text, flags=re.S):
        names += re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*;", block)
    return names


def library_version():
    text = read(os.path.join(HEADERS, "version.h"))
    major = re.search(r"#define AGILE_VERSION_MAJOR (\d+)", text).group(1)
    minor = re.search(r"#define AGILE_VERSION_MINOR (\d+)", text).group(1)
    return "%s.%s" % (major, minor)


class Doc:
    """One kernel-doc comment and the declaration after it."""

    def __init__(self, header, name, summary, params, sections, decl):
        self.header = header
        self.name = name
        self.summary = summary
        self.params = params  # [(name, text)]
        self.sections = sections  # [(title or None, [lines])]
        self.decl = decl


def comment_lines(block):
    lines = []
    for line in block.split("\n")[1:]:
        line = re.sub(r"^\s*\*/? ?", "", line, count=1)
        lines.append(line.rstrip())
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


SECTION = re.compile(r"^(Return|Returns|Thread safety|Context|Note|Notes|"
                     r"Example|Errors|Locking):\s*(.*)$")


def parse_comment(header, block, decl):
    lines = comment_lines(block)
    if not lines:
        return None
    # Functions only: a struct's doc may share a call's name.
    m = re.match(r"^([A-Za-z_]\w*)(?:\(\))?\s+-\s+(.*)$", lines[0])
    if not m or m.group(1) in ("struct", "enum", "union"):
        return None
    name, summary = m.group(1), m.group(2)
    i = 1
    # The summary may go on over a few lines, up to the blank line or @arg.
    while i < len(lines) and lines[i].strip() and not lines[i].startswith("@"):
        summary += " " + lines[i].strip()
        i += 1
    params = []
    while i < len(lines) and (lines[i].startswith("@") or
                              (params and lines[i][:1] in (" ", "\t"))):
        pm = re.match(r"^@(\w+|\.\.\.):\s*(.*)$", lines[i])
        if pm:
            params.append([pm.group(1), pm.group(2).strip()])
        else:
            params[-1][1] += " " + lines[i].strip()
        i += 1
    sections = [[None, []]]
    for line in lines[i:]:
        sm = SECTION.match(line)
        if sm:
            title = sm.group(1)
            if title == "Returns":
                title = "Return"
            sections.append([title, [sm.group(2)] if sm.group(2) else []])
        else:
            sections[-1][1].append(line)
    return Doc(header, name, summary, params, sections, decl)


def declaration_after(text, pos):
    """The C declaration that starts at pos: up to ';' or '{'."""
    rest = text[pos:]
    m = re.search(r"[;{]", rest)
    decl = rest[:m.start()] if m else rest
    decl = re.sub(r"\s+", " ", decl).strip()
    decl = decl.replace("( ", "(").replace(" )", ")")
    if decl.startswith("#define"):
        decl = rest.lstrip().split("\n", 1)[0].strip()
        return decl
    return decl + ";"


def parse_header(header):
    text = read(os.path.join(HEADERS, header))
    docs = {}
    for m in re.finditer(r"/\*\*.*?\*/", text, flags=re.S):
        doc = parse_comment(header, m.group(0),
                           declaration_after(text, m.end()))
        if doc and doc.name not in docs:
            docs[doc.name] = doc
    return docs, text


def header_paragraph(text, title):
    """The paragraph of a header's top comment that starts with title."""
    top = next((m.group(0) for m in re.finditer(r"/\*(?!\*).*?\*/", text,
                                                 flags=re.S)
                if "SPDX" not in m.group(0)), None)
    if not top:
        return None
    paragraphs = "\n".join(comment_lines(top)).split("\n\n")
    for p in paragraphs:
        idx = p.find(title)
        if idx >= 0:
            return " ".join(p[idx:].split())
    return None


# ---------------------------------------------------------------- roff


def esc(s):
    s = s.replace("\\", "\\e")
    return s


def inline(s, symbols, self_name=None):
    """Escape, and mark up @arg, symbol names and errnos."""
    s = esc(s)
    s = re.sub(r"@(\w+)", r"\\fI\1\\fP", s)

    def sym(m):
        word = m.group(1)
        if word == self_name:
            return "\\fB%s\\fP()" % word if m.group(2) else "\\fB%s\\fP" % word
        if word in symbols:
            return "\\fB%s\\fP(3)" % word
        return m.group(0)

    s = re.sub(r"\b(agile_\w+)(\(\))?", sym, s)
    return s


def line_safe(s):
    """A text line may not start with '.' or an apostrophe."""
    if s.startswith(".") or s.startswith("'"):
        return "\\&" + s
    return s


def paragraphs(lines):
    """Split comment lines into paragraphs of kind 'text', 'list', 'code'."""
    out = []
    cur = []

    def flush():
        if cur:
            out.append(list(cur))
            cur.clear()

    for line in lines:
        if not line.strip():
            flush()
        else:
            cur.append(line)
    flush()
    result = []
    for p in out:
        if all(l.startswith(("\t", "    ")) for l in p) and \
                not re.match(r"^\s*[-*] ", p[0]):
            result.append(("code", p))
        elif re.match(r"^\s*[-*] ", p[0]):
            items = []
            for l in p:
                if re.match(r"^\s*[-*] ", l):
                    items.append(re.sub(r"^\s*[-*] ", "", l).strip())
                else:
                    items[-1] += " " + l.strip()
            result.append(("list", items))
        else:
            result.append(("text", " ".join(l.strip() for l in p)))
    return result


def emit_paragraphs(out, lines, symbols, name):
    first = True
    for kind, body in paragraphs(lines):
        if kind == "text":
            if not first:
                out.append(".PP")
            out.append(line_safe(inline(body, symbols, name)))
        elif kind == "list":
            for item in body:
                out.append(".IP \\(bu 2")
                out.append(line_safe(inline(item, symbols, name)))
            out.append(".PP")
        else:
            out.append(".PP")
            out.append(".EX")
            indent = min(len(l) - len(l.lstrip()) for l in body)
            for l in body:
                out.append(line_safe(esc(l[indent:].replace("\t", "    "))))
            out.append(".EE")
        first = False


ERRNO = re.compile(r"-?\b((?:AGILE_E_[A-Z0-9_]+)|(?:E[A-Z][A-Z0-9]+))\b")


# What an errno means when the Return: text gives no reason of its own.
COMMON_ERRORS = {
    "ENOMEM": "Out of memory.",
    "EACCES": "Permission denied (the device node's mode, or a group's).",
    "EFAULT": "A bad address was handed to the kernel.",
    "EINTR": "A signal interrupted the call.",
    "EINVAL": "An argument is invalid.",
    "EBUSY": "The object is in use.",
    "ENOSYS": "Not supported by this build.",
    "ENODEV": "No such device.",
    "ETIMEDOUT": "The timeout passed.",
    "EPIPE": "A peer is gone: the group or the collective has ended.",
    "ENOSPC": "Over a limit.",
}


def agile_errors():
    """{AGILE_E_*: meaning} from the comment of <agile/error.h>."""
    text = read(os.path.join(HEADERS, "error.h"))
    meanings = {}
    current = None
    for line in text.split("\n"):
        m = re.match(r"^ \* (AGILE_E_\w+):\s+(.*)$", line)
        if m:
            current = m.group(1)
            meanings[current] = m.group(2).strip()
        elif current and re.match(r"^ \*\s{4,}\S", line):
            meanings[current] += " " + line[2:].strip()
        else:
            current = None
    return {k: v[0].upper() + v[1:] for k, v in meanings.items()}


def clause(text):
    """text up to the end of its clause: ';', '. ', or ', ' before the
    next errno, outside parentheses."""
    depth = 0
    for j, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif depth == 0 and (ch == ";" or (ch == "." and
                                          text[j + 1:j + 2] in (" ", ""))):
            return text[:j]
        elif depth == 0 and ch == "," and re.match(
                r",\s*(?:or\s+|and\s+)?-?(?:E[A-Z]|AGILE_E_)", text[j:]):
            return text[:j]
    return text


def errors_of(text):
    """[(errno, reason)] from a Return: text, in order, once each."""
    found = []
    seen = set()
    for m in ERRNO.finditer(text):
        name = m.group(1)
        if name in seen or name in ("EU", "EUS", "EOF", "EXCL"):
            continue
        seen.add(name)
        reason = ""
        rest = text[m.end():]
        rm = re.match(r"\s*\(", rest)
        if rm:
            depth, j = 0, rm.end() - 1
            for j in range(rm.end() - 1, len(rest)):
                if rest[j] == "(":
                    depth += 1
                elif rest[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
            reason = rest[rm.end():j]
        else:
            rm = re.match(r"\s*(?:if|when|for|on|where)\s", rest)
            if rm:
                reason = clause(rest).strip()
        found.append((name, reason))
    return found


def title(name, section, version, library):
    # No hyphenation: it would break symbol names (HY: an.tmac's own).
    return '.TH %s %s "" "%s %s" "libagile Manual"\n.nr HY 0\n.nh' % (
        name, section, library, version)


def symbol_page(doc, library, version, symbols, family, thread_default,
                example, header_errors=None, structs=None):
    structs = structs or {}
    name = doc.name
    out = [".\\\" SPDX-License-Identifier: MIT",
           ".\\\" Generated by tools/man-gen.py from agile/%s: do not edit."
           % doc.header,
           title(name, 3, version, library),
           ".SH NAME",
           "%s \\- %s" % (name, esc(doc.summary.replace("@", ""))),
           ".SH SYNOPSIS",
           ".nf",
           ".B #include <agile/%s>" % doc.header,
           ".PP"]
    for piece in wrap_decl(doc.decl):
        out.append(".BI \"%s\"" % piece.replace("\\", "\\e")
                   .replace('"', '\\(dq'))
    out.append(".fi")
    out.append(".PP")
    out.append("Link with \\fI\\-l%s\\fP%s." % (
        library.replace("lib", "", 1),
        " \\fI\\-lagile\\fP" if library == "libagile-mpi" else ""))
    out.append(".SH DESCRIPTION")
    desc = [s for s in doc.sections if s[0] in (None, "Note", "Notes",
                                                 "Context", "Locking",
                                                 "Errors")]
    if not any(l.strip() for _, lines in desc for l in lines):
        text = doc.summary[0].upper() + doc.summary[1:]
        out.append(line_safe(inline(text.rstrip(".") + ".", symbols, name)))
    for t, lines in desc:
        if not any(l.strip() for l in lines):
            continue
        out.append(".PP")
        if t:
            lines = ["%s: %s" % (t, lines[0])] + lines[1:]
        emit_paragraphs(out, lines, symbols, name)
    if doc.params:
        out.append(".PP")
        out.append("Arguments:")
        for pname, ptext in doc.params:
            out.append(".TP")
            out.append(".I %s" % ("\\&..." if pname == "..." else pname))
            out.append(line_safe(inline(ptext, symbols, name)))
    for sname in dict.fromkeys(re.findall(r"struct (\w+)", doc.decl)):
        if sname not in structs:
            continue
        code, fields, _ = structs[sname]
        out.append(".SS struct %s" % sname)
        out.append(".EX")
        for l in code.split("\n"):
            out.append(line_safe(esc(l.replace("\t", "    "))))
        out.append(".EE")
        for fname, ftext in fields:
            out.append(".TP")
            out.append(".I %s" % fname)
            out.append(line_safe(inline(ftext, symbols, name)))
    ret = next((s[1] for s in doc.sections if s[0] == "Return"), None)
    out.append(".SH RETURN VALUE")
    if ret:
        emit_paragraphs(out, ret, symbols, name)
    elif doc.decl.startswith("void "):
        out.append("None.")
    else:
        out.append("See DESCRIPTION.")
    errors = errors_of(" ".join(ret)) if ret else []
    if not errors and header_errors:
        errors = errors_of(header_errors)
    if errors:
        out.append(".SH ERRORS")
        out.append("As negative values (\\-\\fIerrno\\fP), as the return "
                   "value says:")
        for err, reason in errors:
            out.append(".TP")
            out.append(".B %s" % err)
            if reason:
                out.append(line_safe(inline(reason[0].upper() + reason[1:],
                                            symbols, name)))
            elif err in COMMON_ERRORS:
                out.append(COMMON_ERRORS[err])
            elif err in agile_errors():
                out.append(line_safe(inline(agile_errors()[err], symbols,
                                            name)) + ".")
            elif err.startswith("AGILE_E_"):
                out.append("See \\fBagile_strerror\\fP(3) and "
                           "\\fI<agile/error.h>\\fP.")
            else:
                out.append("See RETURN VALUE.")
    ts = next((s[1] for s in doc.sections if s[0] == "Thread safety"), None)
    out.append(".SH THREAD SAFETY")
    while ts and not ts[-1].strip():
        ts = ts[:-1]
    if ts:
        ts = [ts[0][:1].upper() + ts[0][1:]] + ts[1:]
        if not ts[-1].rstrip().endswith("."):
            ts[-1] = ts[-1].rstrip() + "."
        emit_paragraphs(out, ts, symbols, name)
    elif thread_default:
        out.append(line_safe(inline(thread_default, symbols, name)))
    else:
        out.append("Not stated; see \\fI<agile/%s>\\fP." % doc.header)
    if example:
        out.append(".SH EXAMPLE")
        out.append("From \\fIman/examples/%s.c\\fP:" % name)
        out.append(".PP")
        out.append(".EX")
        for l in example.rstrip("\n").split("\n"):
            out.append(line_safe(esc(l.replace("\t", "    "))))
        out.append(".EE")
    out.append(".SH SEE ALSO")
    out.append(".ad l")
    see = [s for s in family if s != name]
    refs = ["\\fBlibagile\\fP(3)"]
    if doc.header == "dev.h":
        refs.append("\\fBagile\\fP(4)")
    refs += ["\\fB%s\\fP(3)" % s for s in see]
    out.append(",\n".join(refs))
    return "\n".join(out) + "\n"


# Internal symbols exported for another reason than the inline spawn/sync:
# (the header that declares it, why it is exported).
INTERNAL = {
    "agile__segmap_create": (
        "libagile/src/segmap/scope.h",
        "libagile\\-mpi's machines scope (\\fBagile_segmap_mpi_create\\fP(3)) "
        "makes its segment maps with it: it is part of the ABI between "
        "libagile and libagile\\-mpi, not of the API"),
}


def internal_page(name, decl, header, version):
    if name in INTERNAL:
        path, why = INTERNAL[name]
        text = read(os.path.join(REPO, path))
        decl = internal_decl(text, name)
        return "\n".join([
            ".\\\" SPDX-License-Identifier: MIT",
            ".\\\" Generated by tools/man-gen.py: do not edit.",
            title(name, 3, version, "libagile"),
            ".SH NAME",
            "%s \\- internal ABI between libagile and libagile\\-mpi" % name,
            ".SH SYNOPSIS",
            ".nf",
            ".B #include \\(dq%s\\(dq" % path,
            ".PP"] + [".BI \"%s\"" % p for p in wrap_decl(decl)] + [
            ".fi",
            ".SH DESCRIPTION",
            "\\fB%s\\fP() is exported only because %s.  Applications "
            "never call it; it may change meaning in a new symbol version."
            % (name, why),
            ".SH RETURN VALUE",
            "Internal.",
            ".SH THREAD SAFETY",
            "Internal.",
            ".SH SEE ALSO",
            ".ad l",
            "\\fBlibagile\\fP(3), \\fBagile_segmap_mpi_create\\fP(3)",
        ]) + "\n"
    return "\n".join([
        ".\\\" SPDX-License-Identifier: MIT",
        ".\\\" Generated by tools/man-gen.py: do not edit.",
        title(name, 3, version, "libagile"),
        ".SH NAME",
        "%s \\- internal ABI of the inline spawn and sync" % name,
        ".SH SYNOPSIS",
        ".nf",
        ".B #include <agile/%s>" % header,
        ".PP"] + [".BI \"%s\"" % p for p in wrap_decl(decl)] + [
        ".fi",
        ".SH DESCRIPTION",
        "\\fB%s\\fP() is exported only because the inline functions behind "
        "\\fBAGILE_SPAWN\\fP, \\fBAGILE_SYNC\\fP and \\fBAGILE_RUN\\fP in "
        "\\fI<agile/%s>\\fP call it: it is part of libagile's ABI, not of "
        "its API.  Applications never call it; it may change meaning in a "
        "new symbol version." % (name, header),
        ".SH RETURN VALUE",
        "Internal.",
        ".SH THREAD SAFETY",
        "Worker context only (see \\fBagile_sched_create\\fP(3)).",
        ".SH SEE ALSO",
        "\\fBlibagile\\fP(3), \\fBagile_sched_run\\fP(3)",
    ]) + "\n"


def wrap_decl(decl, width=72):
    """Break a prototype after commas so that it fits a terminal."""
    if len(decl) <= width:
        return [decl]
    pieces = []
    m = re.match(r"^(.*?\()(.*)$", decl)
    head, rest = m.group(1), m.group(2)
    indent = " " * min(len(head), 24)
    args = [a.strip() for a in split_args(rest)]
    line = head
    for k, a in enumerate(args):
        sep = ", " if k < len(args) - 1 else ""
        if len(line) + len(a) + len(sep) > width and line.strip() and \
                line != head:
            pieces.append(line.rstrip())
            line = indent
        line += a + sep
    pieces.append(line.rstrip())
    return pieces


def split_args(s):
    depth, cur, out = 0, "", []
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def internal_decl(text, name):
    m = re.search(r"^[^\n;{}]*\b%s\s*\([^;{]*\)" % re.escape(name), text,
                  flags=re.M)
    return re.sub(r"\s+", " ", m.group(0)).strip() + ";" if m else \
        "/* see the header */"


def family_of(name, names_in_header):
    parts = name.split("_")
    for n in (3, 2):
        prefix = "_".join(parts[:n]) + "_"
        fam = [s for s in names_in_header if s.startswith(prefix)]
        if 1 < len(fam) <= 16:
            return fam
    return [s for s in names_in_header][:12]


# ---------------------------------------------------------------- agile.4


def uapi_structs():
    return structs_of(read(UAPI))


def structs_of(text):
    """{name: (definition, [(field, text)])} of the documented structs."""
    structs = {}
    for m in re.finditer(r"/\*\*((?:(?!\*/).)*?)\*/\s*(struct (\w+) \{.*?\n\};)",
                         text, flags=re.S):
        lines = comment_lines("/**" + m.group(1) + "*/")
        params = []
        body = []
        for k, line in enumerate(lines[1:], 1):
            pm = re.match(r"^@(\w+):\s*(.*)$", line)
            if pm:
                params.append([pm.group(1), pm.group(2).strip()])
            elif params and line[:1] in (" ", "\t") and line.strip():
                params[-1][1] += " " + line.strip()
            elif not line.strip() and params:
                body = lines[k + 1:]
                break
        structs[m.group(3)] = (m.group(2), params, body)
    return structs


def agile4(version):
    template = read(os.path.join(MAN, "agile.4.in"))
    structs = uapi_structs()
    out = []
    for line in template.split("\n"):
        m = re.match(r'^\.\\" @struct (\w+)$', line)
        if not m:
            out.append(line)
            continue
        code, params, body = structs[m.group(1)]
        out.append(".PP")
        out.append(".EX")
        for l in code.split("\n"):
            out.append(line_safe(esc(l.replace("\t", "    "))))
        out.append(".EE")
        for pname, ptext in params:
            out.append(".TP")
            out.append(".I %s" % pname)
            out.append(line_safe(inline(ptext, set())))
        out.append(".PP")
        if any(l.strip() for l in body):
            emit_paragraphs(out, body, set(), None)
            out.append(".PP")
    text = "\n".join(out)
    text = text.replace("@VERSION@", version)
    return text


# ---------------------------------------------------------------- main


def generate():
    version = library_version()
    pages = {}
    symbols = {}
    for library, path in MAPS:
        for s in exported(path):
            symbols[s] = library
    headers = sorted(f for f in os.listdir(HEADERS) if f.endswith(".h"))
    docs = {}
    texts = {}
    where = {}
    for h in headers:
        d, text = parse_header(h)
        texts[h] = text
        for k, v in d.items():
            docs.setdefault(k, v)
        for s in symbols:
            if s not in where and re.search(r"\b%s\s*\(" % re.escape(s),
                                            text):
                where[s] = h
    missing = []
    by_header = {}
    for s in symbols:
        h = docs[s].header if s in docs else where.get(s)
        by_header.setdefault(h, []).append(s)
    for s, library in symbols.items():
        if s.startswith("agile__"):
            h = where.get(s, "sched.h")
            doc = docs.get(s)
            decl = doc.decl if doc else internal_decl(texts[h], s)
            pages["man3/%s.3" % s] = internal_page(s, decl, h, version)
            continue
        doc = docs.get(s)
        if not doc or "(" not in doc.decl:
            missing.append(s)
            continue
        fam = family_of(s, [n for n in by_header[doc.header]
                            if not n.startswith("agile__")])
        ex_path = os.path.join(EXAMPLES, s + ".c")
        example = None
        if os.path.exists(ex_path):
            example = re.sub(r"^// SPDX.*\n", "", read(ex_path))
        pages["man3/%s.3" % s] = symbol_page(
            doc, library, version, set(symbols), fam,
            header_paragraph(texts[doc.header], "Thread safety"), example,
            header_paragraph(texts[doc.header], "Errors:"),
            structs_of(texts[doc.header]))
    # The documented macros and inline calls of the public headers, which
    # no map exports (AGILE_TASK, AGILE_SPAWN, agile_acc_ptr, ...): a page
    # each, in the overview beside the calls of their header.
    for s, doc in sorted(docs.items()):
        if s in symbols or s.startswith(("agile__", "AGILE__")):
            continue
        if not (doc.decl.startswith("#define " + s + "(") or
                doc.decl.startswith("static inline")):
            continue
        doc.decl = doc.decl.rstrip("\\ ").strip()
        if doc.decl.startswith("#define"):
            doc.decl = doc.decl[len("#define "):]
        names = [n for n in by_header.get(doc.header, [])
                 if not n.startswith("agile__")]
        pages["man3/%s.3" % s] = symbol_page(
            doc, "libagile", version, set(symbols) | {s}, family_of(s, names),
            header_paragraph(texts[doc.header], "Thread safety"), None,
            header_paragraph(texts[doc.header], "Errors:"),
            structs_of(texts[doc.header]))
        by_header.setdefault(doc.header, []).append(s)
    pages["man3/agile_cxx.3"] = cxx_page(version)
    pages["man3/libagile.3"] = overview(version, symbols, docs, by_header)
    pages["man4/agile.4"] = agile4(version)
    return pages, missing


def cxx_page(version):
    """agile_cxx(3): the C++17 wrapper, agile/sched.hpp, from its comments."""
    text = read(os.path.join(HEADERS, "sched.hpp"))
    top = comment_lines("/*\n" + re.search(r"/\*\n(.*?)\*/", text,
                                           flags=re.S).group(1))
    top = [l for l in top if not l.startswith("agile/sched.hpp")]
    out = [".\\\" SPDX-License-Identifier: MIT",
           ".\\\" Generated by tools/man-gen.py from agile/sched.hpp: do "
           "not edit.",
           title("agile_cxx", 3, version, "libagile"),
           ".SH NAME",
           "agile::run, agile::parallel_for, agile::parallel_reduce, "
           "agile::spawn, agile::task \\- C++17 lambdas on the agile "
           "scheduler",
           ".SH SYNOPSIS",
           ".nf",
           ".B #include <agile/sched.hpp>",
           ".fi",
           ".PP",
           "Compile as C++17; link with \\fI\\-lagile\\fP.",
           ".SH DESCRIPTION"]
    emit_paragraphs(out, top, set(), "agile_cxx")
    for m in re.finditer(r"/\*\*.*?\*/", text, flags=re.S):
        block = m.group(0).replace("* class ", "* ", 1)
        doc = parse_comment("sched.hpp", block,
                            declaration_after(text, m.end()).rstrip(";"))
        if not doc:
            continue
        out.append(".SS agile::%s" % esc(doc.name))
        out.append(".EX")
        out.append(line_safe(esc(doc.decl)))
        out.append(".EE")
        out.append(".PP")
        out.append(line_safe(inline(doc.summary[0].upper() +
                                    doc.summary[1:], set(), doc.name)))
        for pname, ptext in doc.params:
            out.append(".TP")
            out.append(".I %s" % pname)
            out.append(line_safe(inline(ptext, set(), doc.name)))
        for t, lines in doc.sections:
            if not any(l.strip() for l in lines):
                continue
            out.append(".PP")
            if t:
                lines = ["%s: %s" % (t, lines[0])] + lines[1:]
            emit_paragraphs(out, lines, set(), doc.name)
    out.append(".SH SEE ALSO")
    out.append("\\fBagile_sched_create\\fP(3), \\fBAGILE_TASK\\fP(3), "
               "\\fBlibagile\\fP(3)")
    return "\n".join(out) + "\n"


def overview(version, symbols, docs, by_header):
    out = [".\\\" SPDX-License-Identifier: MIT",
           ".\\\" Generated by tools/man-gen.py: do not edit.",
           title("libagile", 3, version, "libagile"),
           ".SH NAME",
           "libagile, libagile-mpi \\- CPU workers and execution units "
           "sharing work through memory, with /dev/agile as the referee",
           ".SH SYNOPSIS",
           ".nf",
           ".B #include <agile/agile.h>",
           ".fi",
           ".PP",
           "Link with \\fI\\-lagile\\fP; the machines scope with "
           "\\fI\\-lagile\\-mpi \\-lagile\\fP.",
           ".SH DESCRIPTION",
           "libagile is built in layers, lowest first below; a layer uses "
           "only those before it (tools/check-layers.sh holds the sources "
           "and headers to that order).  Every call "
           "returns 0 or a negative errno unless its page says otherwise "
           "(\\fBagile_strerror\\fP(3)).  Each call has its own page.",
           ]
    for h, what in LAYERS:
        names = [s for s in by_header.get(h, []) if not s.startswith(
            "agile__")]
        if not names:
            continue
        out.append(".SS <agile/%s> \\(em %s" % (h, esc(what)))
        for s in names:
            out.append(".TP")
            out.append(".BR %s (3)" % s)
            out.append(line_safe(inline(docs[s].summary, set())) if s in docs
                       else "")
    out.append(".SS <agile/sched.hpp> \\(em layer 4, sched: C++17 lambdas")
    out.append(".TP")
    out.append(".BR agile_cxx (3)")
    out.append("agile::run, agile::parallel_for, agile::parallel_reduce, "
               "agile::spawn and agile::task")
    internal = [s for s in symbols if s.startswith("agile__")]
    out.append(".SS Internal ABI")
    out.append("Exported for the inline spawn and sync, or for "
               "libagile\\-mpi, only; never called by applications: " +
               ", ".join("\\fB%s\\fP(3)" % s for s in internal) + ".")
    out.append(".SH ENVIRONMENT")
    out.append("The variables libagile reads are listed where they act (each "
               "call's page, README.md).  One set to a value it does not "
               "take is named on standard error, with what it takes and what "
               "the library does instead (the call fails with \\-EINVAL, or "
               "the default applies), once per variable and process; "
               "\\fBAGILE_QUIET\\fP does not silence it:")
    out.append(".PP")
    out.append(".EX")
    out.append("agile: AGILE_BACKEND=\\(dqkmdo\\(dq is not valid: kmod or "
               "user; agile_dev_open fails with EINVAL")
    out.append(".EE")
    out.append(".TP")
    out.append(".B AGILE_DEBUG=1")
    out.append("the library says on standard error what it chose and why, "
               "once a process: the dev layer's backend "
               "(\\fBagile_dev_open\\fP(3)), e.g. \\(lqagile: backend user "
               "(no device node; /dev/agile)\\(rq; the reason is "
               "\\fBAGILE_BACKEND\\fP, agile_dev_opts.backend, or whether "
               "the node exists.")
    out.append(".SH SEE ALSO")
    out.append("\\fBagile\\fP(4), \\fBagilectl\\fP(8), "
               "\\fBagile\\-bench\\fP(1), \\fBagile\\-retarget\\fP(1)")
    return "\n".join(out) + "\n"


def main():
    check = "--check" in sys.argv[1:]
    pages, missing = generate()
    status = 0
    if missing:
        for s in missing:
            print("man-gen: %s is exported but has no kernel-doc comment "
                  "before a prototype in libagile/include/agile/" % s,
                  file=sys.stderr)
        status = 1
    for rel, text in sorted(pages.items()):
        path = os.path.join(MAN, rel)
        old = read(path) if os.path.exists(path) else None
        if old == text:
            continue
        if check:
            print("man-gen: man/%s is %s (run tools/man-gen.py)" %
                  (rel, "missing" if old is None else "out of date"),
                  file=sys.stderr)
            status = 1
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    # Generated pages of symbols no longer exported.
    for page in sorted(os.listdir(os.path.join(MAN, "man3"))
                       if os.path.isdir(os.path.join(MAN, "man3")) else []):
        if "man3/" + page not in pages:
            if check:
                print("man-gen: man/man3/%s: no exported symbol has this "
                      "name" % page, file=sys.stderr)
                status = 1
            else:
                os.remove(os.path.join(MAN, "man3", page))
    return status


if __name__ == "__main__":
    sys.exit(main())
