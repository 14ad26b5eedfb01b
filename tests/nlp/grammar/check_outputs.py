#!/usr/bin/env python3
"""Validates generated JSON against its schema with python3-jsonschema (an independent validator).

Reads a JSON Lines file of {"schema": ..., "output": "<text the model generated>"} and exits 0 when
every output parses as JSON and validates under its schema (draft 2020-12, formats checked), 1
with the failures listed, 77 when the jsonschema module is missing (ctest's skip code).
"""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is not installed (scripts/install-deps.sh installs it)")
    sys.exit(77)


def main(path):
    failures = 0
    count = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            item = json.loads(line)
            count += 1
            try:
                instance = json.loads(item["output"])
            except json.JSONDecodeError as e:
                print(f"#{count}: not JSON ({e}): {item['output']!r}")
                failures += 1
                continue
            validator = jsonschema.Draft202012Validator(item["schema"], format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
            errors = list(validator.iter_errors(instance))
            if errors:
                print(f"#{count}: {item['output']!r} fails {json.dumps(item['schema'])}: {errors[0].message}")
                failures += 1
    print(f"{count - failures} of {count} outputs validate")
    return 1 if failures or count == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
