"""python -m spore.env: the environment report of this process, the chapter's "which copy did I
import" check: the interpreter, where spore (and spore_lite, numpy) were imported from, the C++
build's report (spore env: version, commit, CPU, BLAS, ...) and the path of every shared library
loaded in the process (two copies of a library are the classic false lead, chapter 5.2).
--json prints it as JSON."""
import json
import os
import sys


def loaded_libraries():
    """Paths of the shared objects mapped into this process (Linux: /proc/self/maps)."""
    paths = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and ".so" in os.path.basename(parts[5]) and parts[5] not in paths:
                    paths.append(parts[5])
    except OSError:
        pass
    return paths


def collect(with_lite=True):
    import numpy
    import spore
    from spore import _spore
    report = {
        "python_executable": sys.executable,
        "python_version": sys.version.split()[0],
        "spore_version": spore.__version__,
        "spore_package": os.path.dirname(spore.__file__),
        "spore_module": _spore.__file__,
        "numpy": {"version": numpy.__version__, "path": os.path.dirname(numpy.__file__)},
        "user_site_disabled": bool(os.environ.get("PYTHONNOUSERSITE")),
    }
    if with_lite:
        try:
            import spore_lite
            report["spore_lite_module"] = spore_lite._spore_lite.__file__
        except ImportError as e:
            report["spore_lite_module"] = f"not importable: {e}"
    text, native = _spore._env_report(sys.argv)
    report["native"] = json.loads(native)
    report["shared_libraries"] = loaded_libraries()
    return report, text


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    report, text = collect()
    if "--json" in argv:
        print(json.dumps(report, indent=2))
        return 0
    print(f"python            {report['python_executable']} ({report['python_version']})")
    print(f"spore             {report['spore_version']} from {report['spore_package']}")
    print(f"  extension       {report['spore_module']}")
    print(f"spore_lite        {report.get('spore_lite_module')}")
    print(f"numpy             {report['numpy']['version']} from {report['numpy']['path']}")
    print()
    print(text.rstrip())  # ends with every shared library loaded in this process, by path
    return 0


if __name__ == "__main__":
    sys.exit(main())
