#!/usr/bin/env python3
"""Generate the single header single_include/graft/graft.hpp from include/graft/graft.hpp.

Usage: python3 scripts/amalgamate.py [--root REPO] [--out FILE]   (no arguments needed)

Every `#include "graft/..."` / `#include <graft/...>` is inlined once, in order;
`#pragma once` lines and classic include guards of inlined files are dropped.
Standard and third-party includes are kept as they are.

Highway's dynamic dispatch re-includes one file per SIMD target (HWY_TARGET_INCLUDE,
via hwy/foreach_target.h). In the single header that file is the single header
itself, so the output is laid out in three parts:

  1. main part (normal include guard): graft/kernels/config.hpp first, then everything
     that precedes the `// graft-amalgamate: foreach-target-begin` marker in
     graft/kernels/simd.hpp (first included by graft/kernels/dispatch.hpp); it ends by setting
     HWY_TARGET_INCLUDE to GRAFT_SINGLE_HEADER_SELF (default "graft/graft.hpp", so
     the directory holding graft/graft.hpp must be on the include path) and including
     hwy/foreach_target.h and hwy/highway.h;
  2. per-target part (no guard; each kernel -inl.hpp keeps its Highway toggle guard):
     graft/kernels/all-inl.hpp with its kernel -inl.hpp files inlined;
  3. dispatch part (#if HWY_ONCE plus its own guard): everything after the
     `// graft-amalgamate: foreach-target-end` marker, i.e. the rest of dispatch.hpp
     and all headers included after it.

Lines between `// graft-amalgamate: skip-begin` and `skip-end` are dropped (simd.hpp's
run-the-pass-once conditions, which the single header's layout makes unnecessary: its
pass always runs, and in compiled mode all-inl.hpp then compiles only the lane functors).

A header may compile its own per-target file outside foreach_target.h (graft/expr's
fused evaluator: graft/expr/detail/fused.hpp includes `GRAFT_EXPR_FUSED_INL` once per
target). Such a file is named by a `// graft-amalgamate: per-target-file <path>` line;
its body goes into a part of its own, under `#if defined(GRAFT_EXPR_FUSED_PASS)`
(placed between parts 2 and 3), and GRAFT_EXPR_FUSED_INL is defined as the single
header itself, which then emits only that body (the other parts are guarded or closed).

Definitions (issue 34): a header's `#if GRAFT_HAS_CODE` / `#if GRAFT_HAS_GRAPH_CODE` region
(its impl/*.ipp includes; compiled out in a compiled-mode TU) stays where it is, but a header
first reached from inside one (an .ipp's own #include) is pasted just before the outermost
such region, outside it, so that its declarations exist in both build modes. (The .ipp
bodies keep their place: moving them all to the end would change what their unqualified
calls find.) Finally the output is checked: every header (`// ---- begin X`, X not an .ipp)
must lie outside every conditional that tests GRAFT_HAS_CODE / GRAFT_HAS_GRAPH_CODE, and every
.ipp inside one; otherwise the script fails and writes nothing. `--check FILE` runs only that
check on an existing file.
"""
import argparse
import os
import re
import sys

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"](graft/[^>"]+)[>"]')
PRAGMA_ONCE_RE = re.compile(r'^\s*#\s*pragma\s+once\b')
BEGIN_MARK = "// graft-amalgamate: foreach-target-begin"
PER_TARGET_FILE_MARK = "// graft-amalgamate: per-target-file "
END_MARK = "// graft-amalgamate: foreach-target-end"
SKIP_BEGIN = "// graft-amalgamate: skip-begin"
SKIP_END = "// graft-amalgamate: skip-end"
PER_TARGET_UMBRELLA = "graft/kernels/all-inl.hpp"
CONFIG = "graft/kernels/config.hpp"
# A header's code-only region, as graft's headers write it (graft/config.hpp defines both).
CODE_REGION_RE = re.compile(r'^\s*#\s*if\s+(GRAFT_HAS_CODE|GRAFT_HAS_GRAPH_CODE)\s*(//.*)?$')
CODE_MACRO_RE = re.compile(r'\bGRAFT_HAS_(GRAPH_)?CODE\b')
COND_RE = re.compile(r'^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)$')


def strip_guard(lines):
    """Remove a classic #ifndef X / #define X ... #endif guard spanning the file."""
    idx = [i for i, l in enumerate(lines) if l.strip() and not l.strip().startswith("//")]
    if len(idx) < 3:
        return lines
    m1 = re.match(r'^\s*#\s*ifndef\s+(\w+)\s*$', lines[idx[0]])
    m2 = re.match(r'^\s*#\s*define\s+(\w+)\s*$', lines[idx[1]])
    last = lines[idx[-1]].strip()
    if m1 and m2 and m1.group(1) == m2.group(1) and last.startswith("#endif"):
        # Make sure the #ifndef is closed by the last #endif (balanced in between).
        depth = 0
        for i in range(idx[0], idx[-1] + 1):
            s = lines[i].strip()
            if re.match(r'#\s*if', s):
                depth += 1
            elif re.match(r'#\s*endif', s):
                depth -= 1
                if depth == 0 and i != idx[-1]:
                    return lines
        out = list(lines)
        out[idx[0]] = out[idx[1]] = out[idx[-1]] = None
        return [l for l in out if l is not None]
    return lines


def region_end(lines, start, rel):
    """Index of the #endif closing the #if at lines[start] (#else/#elif branches included)."""
    depth = 0
    for i in range(start, len(lines)):
        m = COND_RE.match(lines[i])
        if not m:
            continue
        if m.group(1) in ("if", "ifdef", "ifndef"):
            depth += 1
        elif m.group(1) == "endif":
            depth -= 1
            if depth == 0:
                return i
    sys.exit(f"amalgamate: {rel}: `{lines[start].strip()}` is not closed")


def check_layout(lines):
    """Errors (strings) where a header's text lies inside a conditional that tests
    GRAFT_HAS_CODE / GRAFT_HAS_GRAPH_CODE (it would vanish in compiled mode), or an .ipp's
    outside every such conditional (it would be defined in every compiled-mode TU)."""
    errors = []
    stack = []  # one entry per open conditional: does it (any of its branches) test a code macro?
    for n, line in enumerate(lines, 1):
        s = line.strip()
        if s.startswith("// ---- begin "):
            rel = s[len("// ---- begin "):].strip()
            in_code = any(stack)
            if rel.endswith(".ipp") and not in_code:
                errors.append(f"line {n}: {rel} (definitions) is outside every GRAFT_HAS_CODE region")
            elif not rel.endswith(".ipp") and in_code:
                errors.append(f"line {n}: header {rel} is inside a GRAFT_HAS_CODE/GRAFT_HAS_GRAPH_CODE "
                              "region: its declarations vanish in compiled mode")
            continue
        m = COND_RE.match(line)
        if not m:
            continue
        kind, cond = m.group(1), m.group(2)
        if kind in ("if", "ifdef", "ifndef"):
            stack.append(bool(CODE_MACRO_RE.search(cond)))
        elif kind == "elif":
            if not stack:
                errors.append(f"line {n}: #elif without #if")
                return errors
            stack[-1] = stack[-1] or bool(CODE_MACRO_RE.search(cond))
        elif kind == "endif":
            if not stack:
                errors.append(f"line {n}: #endif without #if")
                return errors
            stack.pop()
    if stack:
        errors.append(f"{len(stack)} conditional(s) not closed at the end of the file")
    return errors


class Amalgamator:
    def __init__(self, include_dir):
        self.include_dir = include_dir
        self.seen = set()
        self.parts = {"prefix": [], "target": [], "suffix": [], "expr": []}
        self.part = "prefix"
        self.marker_found = False
        self.sink = None          # while a code-only region is pasted: its own buffer
        self.in_code = False      # inside a code-only region
        self.region_outer = None  # where the outermost open region's buffer goes (None: the part)

    def read(self, rel):
        path = os.path.join(self.include_dir, rel)
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()

    def out(self, line):
        (self.sink if self.sink is not None else self.parts[self.part]).append(line)

    def emit(self, rel, per_target=False):
        if rel in self.seen:
            return
        self.seen.add(rel)
        lines = strip_guard([l for l in self.read(rel) if not PRAGMA_ONCE_RE.match(l)])
        self.out(f"// ---- begin {rel}")
        self.paste(rel, lines, per_target)
        self.out(f"// ---- end {rel}")

    def paste(self, rel, lines, per_target):
        skipping = False
        dropping = False
        i = -1
        while i + 1 < len(lines):
            i += 1
            line = lines[i]
            stripped = line.strip()
            # Lines that only the multi-header layout needs (the single header's layout
            # already runs the pass exactly once).
            if stripped == SKIP_BEGIN:
                dropping = True
                continue
            if stripped == SKIP_END:
                dropping = False
                continue
            if dropping:
                continue
            if stripped == BEGIN_MARK:
                if per_target or self.part != "prefix" or self.in_code:
                    sys.exit(f"amalgamate: unexpected {BEGIN_MARK} in {rel}")
                skipping = True
                self.marker_found = True
                self.part = "target"
                self.out(f"// ---- per-target part (re-included by hwy/foreach_target.h)")
                self.emit_per_target(PER_TARGET_UMBRELLA)
                continue
            if stripped == END_MARK:
                skipping = False
                self.part = "suffix"
                self.out(f"// ---- continuing {rel}")
                continue
            if skipping:
                continue
            if stripped.startswith(PER_TARGET_FILE_MARK):
                target = stripped[len(PER_TARGET_FILE_MARK):].strip()
                if self.parts["expr"] or self.in_code:
                    sys.exit(f"amalgamate: a second {PER_TARGET_FILE_MARK.strip()} ({target} in {rel})")
                saved = self.part
                self.part = "expr"
                self.emit(target, per_target=True)
                self.part = saved
                continue
            # A header's definitions (`#if GRAFT_HAS_CODE` + its .ipp includes): pasted into a
            # buffer of their own, so that a header they reach first can go before them.
            if not per_target and not self.in_code and CODE_REGION_RE.match(line):
                end = region_end(lines, i, rel)
                self.paste_region(rel, line, lines[i + 1:end], lines[end])
                i = end
                continue
            m = INCLUDE_RE.match(line)
            if m:
                inc = m.group(1)
                if per_target and inc not in self.seen and not inc.endswith("-inl.hpp"):
                    sys.exit(f"amalgamate: {rel} includes {inc} in the per-target part before "
                             "it was included by the main part")
                if self.in_code and inc not in self.seen and not inc.endswith(".ipp"):
                    self.hoist(inc, rel)
                    continue
                self.emit(inc, per_target=per_target or inc.endswith("-inl.hpp"))
                continue
            self.out(line)

    def paste_region(self, rel, if_line, body, endif_line):
        saved = self.sink, self.in_code, self.region_outer
        block = []
        self.region_outer = self.sink
        self.sink, self.in_code = block, True
        self.out(if_line)
        self.paste(rel, body, per_target=False)
        self.out(endif_line)
        self.sink, self.in_code, self.region_outer = saved
        for line in block:
            self.out(line)

    def hoist(self, inc, rel):
        """Paste header `inc`, first included inside a code-only region of `rel`, before the
        outermost open region (its own regions are handled as anywhere else)."""
        saved = self.sink, self.in_code, self.region_outer
        self.sink, self.in_code, self.region_outer = self.region_outer, False, None
        self.out(f"// ---- (first included by the definitions in {rel})")
        self.emit(inc)
        self.sink, self.in_code, self.region_outer = saved

    def emit_per_target(self, rel):
        self.emit(rel, per_target=True)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(here), help="repository root")
    ap.add_argument("--out", default=None, help="output file (default single_include/graft/graft.hpp)")
    ap.add_argument("--check", metavar="FILE", default=None,
                    help="only check the layout of an existing single header (see the docstring)")
    args = ap.parse_args()
    if args.check:
        with open(args.check, encoding="utf-8") as f:
            errors = check_layout(f.read().splitlines())
        for e in errors:
            print(f"amalgamate: {args.check}: {e}", file=sys.stderr)
        sys.exit(1 if errors else 0)
    include_dir = os.path.join(args.root, "include")
    out_path = args.out or os.path.join(args.root, "single_include", "graft", "graft.hpp")

    am = Amalgamator(include_dir)
    am.emit(CONFIG)  # must precede any Highway header
    am.emit("graft/graft.hpp")
    if not am.marker_found:
        sys.exit("amalgamate: graft/graft.hpp does not (indirectly) include graft/kernels/dispatch.hpp")

    version = ""
    try:
        for l in am.read("graft/version.hpp"):
            if "define GRAFT_VERSION_STRING" in l or "GRAFT_VERSION" in l and '"' in l:
                version = l.strip()
                break
    except OSError:
        pass

    o = []
    o.append("// graft single header, generated by scripts/amalgamate.py from include/graft/graft.hpp.")
    o.append("// DO NOT EDIT: edit the headers in include/ and re-run the script.")
    if version:
        o.append(f"// {version}")
    o.append("//")
    o.append("// This file is re-included by hwy/foreach_target.h once per SIMD target, so the")
    o.append("// directory that contains graft/graft.hpp must be on the include path; if you")
    o.append("// rename or move it, define GRAFT_SINGLE_HEADER_SELF to the include name of this file.")
    o.append("#ifndef GRAFT_SINGLE_HEADER_MAIN_")
    o.append("#define GRAFT_SINGLE_HEADER_MAIN_")
    o += am.parts["prefix"]
    o.append("")
    o.append("#ifndef GRAFT_SINGLE_HEADER_SELF")
    o.append('#define GRAFT_SINGLE_HEADER_SELF "graft/graft.hpp"')
    o.append("#endif")
    o.append("#ifndef GRAFT_EXPR_FUSED_INL")
    o.append("#define GRAFT_EXPR_FUSED_INL GRAFT_SINGLE_HEADER_SELF")
    o.append("#endif")
    o.append("#undef HWY_TARGET_INCLUDE")
    o.append("#define HWY_TARGET_INCLUDE GRAFT_SINGLE_HEADER_SELF")
    o.append("#include <hwy/foreach_target.h>  // re-includes this file once per target")
    o.append("#include <hwy/highway.h>")
    o.append("#endif  // GRAFT_SINGLE_HEADER_MAIN_")
    o.append("")
    o += am.parts["target"]
    o.append("")
    if am.parts["expr"]:
        o.append("// ---- graft/expr per-target part (included once per target by graft/expr/detail/fused.hpp)")
        o.append("#if defined(GRAFT_EXPR_FUSED_PASS)")
        o += am.parts["expr"]
        o.append("#endif  // GRAFT_EXPR_FUSED_PASS")
        o.append("")
    o.append("#if HWY_ONCE")
    o.append("#ifndef GRAFT_SINGLE_HEADER_ONCE_")
    o.append("#define GRAFT_SINGLE_HEADER_ONCE_")
    o += am.parts["suffix"]
    o.append("#endif  // GRAFT_SINGLE_HEADER_ONCE_")
    o.append("#endif  // HWY_ONCE")
    # The layout must hold by construction; checked anyway, before anything is written.
    errors = check_layout(o)
    if errors:
        for e in errors:
            print(f"amalgamate: {e}", file=sys.stderr)
        sys.exit("amalgamate: layout check failed, nothing written")
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("\n".join(o) + "\n")
    print(f"wrote {out_path} ({len(o)} lines, {len(am.seen)} headers)")


if __name__ == "__main__":
    main()
