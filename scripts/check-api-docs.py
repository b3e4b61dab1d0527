#!/usr/bin/env python3
"""Checks that every function declared in the public C headers documents what
it returns: a /** ... */ block right above the declaration with @retval lines
(functions returning tsu_status_t: TSU_OK and every other code it can return,
each a real status name or a value the header #defines; a function that cannot
fail says '@retval TSU_OK always') or a @return line (other return types but void).

  scripts/check-api-docs.py include/tsunagi        # exit 1 and a list when not

The codes themselves are checked against src/api by reading the code
(docs/api.md); this script keeps the list from going missing or naming codes
that do not exist."""
import pathlib
import re
import sys

DECL = re.compile(r"^(?:TSU_API|static inline)\s+(?P<ret>[\w\s\*]+?)\s*\**\s*\b(?P<name>tsu_\w+)\(",
                  re.M)


def status_names(text):
    enum = re.search(r"enum \{\s*TSU_OK = 0,(?P<body>.*?)\};", text, re.S)
    return {"TSU_OK"} | set(re.findall(r"\b(TSU_(?:EAGAIN|ERR_\w+))\s*=", enum.group("body")))


def doc_above(text, pos):
    """The /** */ block ending right above `pos` (only blank space between), or None."""
    before = text[:pos].rstrip()
    if not before.endswith("*/"):
        return None
    start = before.rfind("/*")
    block = before[start:]
    return block if block.startswith("/**") else None


def main():
    folder = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "include/tsunagi")
    headers = sorted(folder.glob("*.h"))
    codes = status_names((folder / "tsunagi.h").read_text())
    problems, checked = [], 0
    for h in headers:
        text = h.read_text()
        # Results a header defines itself (e.g. TSU_ULT_BARRIER_SERIAL) may be listed too.
        own_values = set(re.findall(r"^#define\s+(TSU_\w+)\s", text, re.M))
        for m in DECL.finditer(text):
            name, ret = m.group("name"), m.group("ret").strip()
            checked += 1
            doc = doc_above(text, m.start())
            where = f"{h.name}: {name}"
            if doc is None:
                problems.append(f"{where}: no /** */ comment right above the declaration")
                continue
            retvals = re.findall(r"@retval\s+(\S+)", doc)
            if ret == "tsu_status_t":
                if re.search(r"@return\s+as\s+tsu_\w+", doc):
                    continue  # a wrapper: returns what the named function returns
                if "TSU_OK" not in retvals:
                    problems.append(f"{where}: no '@retval TSU_OK'")
                for r in retvals:
                    if r.startswith("TSU_") and r not in codes and r not in own_values:
                        problems.append(f"{where}: '@retval {r}' is not a status code")
                # A function that cannot fail says so: '@retval TSU_OK always'.
                if len(retvals) < 2 and not re.search(r"@retval\s+TSU_OK\s+always\b", doc):
                    problems.append(f"{where}: lists only {retvals}: which errors can it return?")
            elif ret != "void" and "@return" not in doc:
                problems.append(f"{where}: returns {ret} but has no '@return'")
    for p in problems:
        print(p)
    print(f"{checked} functions in {len(headers)} headers, {len(problems)} problems")
    return 1 if problems or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
