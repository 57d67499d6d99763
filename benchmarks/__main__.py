"""python -m benchmarks SUITE [SUITE...] [OPTIONS]: core, loops, dispatch, callopt, ad, render,
paper, gpu. OPTIONS (from the first argument that starts with '-') go to the suites that take
them: `python -m benchmarks gpu --quick --json figures.json`."""

import importlib
import inspect
import sys

SUITES = ('core', 'loops', 'dispatch', 'callopt', 'ad', 'render', 'paper', 'gpu')


def main(argv):
    k = next((i for i, a in enumerate(argv) if a.startswith('-')), len(argv))
    names, options = argv[:k] or list(SUITES), argv[k:]
    unknown = [n for n in names if n not in SUITES]
    if unknown or (not argv[:k] and options and options[0] in ('-h', '--help')):
        print(f'usage: python -m benchmarks [{"|".join(SUITES)}] ... [OPTIONS]')
        return 0 if not unknown else 2
    mains = [importlib.import_module(f'benchmarks.{name}').main for name in names]
    if options:
        rigid = [n for n, m in zip(names, mains) if not inspect.signature(m).parameters]
        if rigid:
            print(f'python -m benchmarks: {", ".join(rigid)} take(s) no options: {options}')
            return 2
    for fn in mains:
        fn(options) if options else fn()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
