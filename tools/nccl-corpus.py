#!/usr/bin/env python3
"""Run `llmlaunch logs --json` on every case of the NCCL log corpus and compare its
verdict with the one written down in tests/fixtures/nccl/corpus.tsv.

  tools/nccl-corpus.py --llmlaunch BIN [--realdata DIR] [--fixtures DIR]
                       [--markdown] [--check-doc docs/logs.md]

--markdown prints the corpus table of docs/logs.md (file, source, expected verdict,
llmlaunch's verdict); --check-doc fails unless docs/logs.md holds exactly that table
between its corpus markers, and unless every grammar row (G1, G2, ...) of its grammar
table is shown by at least one case. Real cases whose file is absent are skipped, one
message each. Exit status: 0 all equal, 1 a difference, 2 usage or unreadable input."""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
BEGIN, END = "<!-- corpus:begin -->", "<!-- corpus:end -->"


def load(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if not l.startswith("#")]
    head = lines[0].split("\t")
    for n, line in enumerate(lines[1:], 2):
        if not line:
            continue
        cells = line.split("\t")
        if len(cells) != len(head):
            sys.exit(f"{path}: row {n} has {len(cells)} columns, want {len(head)}")
        rows.append(dict(zip(head, cells)))
    return rows


def case_path(case, realdata, fixtures):
    kind, rel = case.split(":", 1)
    return os.path.join(realdata if kind == "real" else fixtures, rel), kind == "real"


def gdr_word(v):
    return {True: "on", False: "off", None: "?"}[v]


def verdict_of(out, rc):
    """The corpus columns from llmlaunch's JSON."""
    d = json.loads(out)
    warns = ",".join(f"{k}={v}" for k, v in d["warnings_by_class"].items() if v)
    return {
        "transport": d["transport"],
        "plugin": d["plugin"] or "-",
        "gdr": gdr_word(d["gdr"]),
        "fallback": d["fallback_reason"] if d["fallback"] else "-",
        "hosts": str(len(d["hosts"])),
        "unknown": str(d["hosts_unknown"]),
        "warnings": warns or "-",
        "version": d["nccl_version"] or "-",
        "exit": str(rc),
    }


FIELDS = ["transport", "plugin", "gdr", "fallback", "hosts", "unknown", "warnings", "version", "exit"]


def words(v):
    """One verdict in words, for the doc table."""
    t = v["transport"] + (f" ({v['plugin']})" if v["plugin"] != "-" else "")
    fb = "no fallback" if v["fallback"] == "-" else f"FALLBACK: {v['fallback']}"
    hosts = f"{v['hosts']} host{'s' if v['hosts'] != '1' else ''}"
    if v["unknown"] != "0":
        hosts += f" ({v['unknown']} unknown)"
    w = "" if v["warnings"] == "-" else f"; warnings {v['warnings']}"
    return f"{t}, GDR {v['gdr']}, {fb}; {hosts}{w}; exit {v['exit']}"


def md_cell(s):
    return s.replace("|", "\\|")


def doc_table(rows, actual):
    out = ["| case | source | expected verdict (why) | llmlaunch's verdict |", "|---|---|---|---|"]
    for r in rows:
        name = r["case"].split(":", 1)[1]
        got = actual.get(r["case"])
        exp = words(r) + (f" - {r['why']}" if r["why"] else "")
        out.append(f"| `{md_cell(name)}` | {md_cell(r['source'])} | {md_cell(exp)} | "
                   f"{md_cell(words(got)) if got else 'not run'} |")
    return out


def grammar_ids(doc):
    ids = []
    for line in doc.splitlines():
        m = re.match(r"^\| (G\d+) \|", line)
        if m:
            ids.append(m.group(1))
    return ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llmlaunch", required=True)
    ap.add_argument("--realdata", default=os.environ.get("LL_REALDATA", os.path.join(SRC, "..", "shared", "realdata")))
    ap.add_argument("--fixtures", default=os.path.join(SRC, "tests", "fixtures", "nccl"))
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--check-doc")
    a = ap.parse_args()

    rows = load(os.path.join(a.fixtures, "corpus.tsv"))
    actual, bad, skipped = {}, 0, 0
    for r in rows:
        path, real = case_path(r["case"], a.realdata, a.fixtures)
        if not os.path.exists(path):
            if real:
                print(f"skip {r['case']}: {path} not present", file=sys.stderr)
                skipped += 1
                continue
            print(f"FAIL {r['case']}: {path} missing", file=sys.stderr)
            bad += 1
            continue
        p = subprocess.run([a.llmlaunch, "logs", "--json", path], capture_output=True, text=True)
        if p.returncode not in (0, 1):
            print(f"FAIL {r['case']}: exit {p.returncode}: {p.stderr.strip()}", file=sys.stderr)
            bad += 1
            continue
        got = verdict_of(p.stdout, p.returncode)
        actual[r["case"]] = got
        diff = [f"{k}: want {r[k]!r}, got {got[k]!r}" for k in FIELDS if r[k] != got[k]]
        if diff:
            bad += 1
            print(f"FAIL {r['case']}:\n    " + "\n    ".join(diff), file=sys.stderr)

    # Every real log there is must be a case.
    cases = {r["case"] for r in rows}
    for d in ("nccl_logs", "nccl_logs_2026"):
        full = os.path.join(a.realdata, d)
        if os.path.isdir(full):
            for f in sorted(os.listdir(full)):
                if f"real:{d}/{f}" not in cases:
                    bad += 1
                    print(f"FAIL {full}/{f} is not in the corpus: write its expected verdict", file=sys.stderr)

    table = doc_table(rows, actual)
    if a.markdown:
        print("\n".join(table))
    if a.check_doc:
        doc = open(a.check_doc, encoding="utf-8").read()
        ids = grammar_ids(doc)
        shown = {g for r in rows for g in r["grammar"].split()}
        for g in ids:
            if g not in shown:
                bad += 1
                print(f"FAIL grammar row {g} of {a.check_doc} is shown by no corpus case", file=sys.stderr)
        for g in sorted(shown - set(ids)):
            bad += 1
            print(f"FAIL corpus names grammar row {g}, which {a.check_doc} does not have", file=sys.stderr)
        if skipped:
            print(f"corpus table of {a.check_doc} not compared: {skipped} real logs absent", file=sys.stderr)
        elif BEGIN not in doc or END not in doc:
            bad += 1
            print(f"FAIL {a.check_doc} has no {BEGIN} ... {END} block", file=sys.stderr)
        else:
            have = doc.split(BEGIN, 1)[1].split(END, 1)[0].strip().splitlines()
            if have != table:
                bad += 1
                print(f"FAIL the corpus table of {a.check_doc} differs from the corpus (regenerate it with "
                      f"tools/nccl-corpus.py --markdown)", file=sys.stderr)
    n_real = sum(r["case"].startswith("real:") for r in rows)
    print(f"{len(rows) - bad - skipped} of {len(rows)} cases agree ({n_real} real, {len(rows) - n_real} constructed"
          f"{f', {skipped} skipped' if skipped else ''})", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
