"""python -m benchmarks SUITE [SUITE...]: core, loops, dispatch, callopt, ad, render, paper."""

import importlib
import sys

SUITES = ('core', 'loops', 'dispatch', 'callopt', 'ad', 'render', 'paper')


def main(argv):
    names = argv or list(SUITES)
    unknown = [n for n in names if n not in SUITES]
    if unknown or any(n in ('-h', '--help') for n in names):
        print(f'usage: python -m benchmarks [{"|".join(SUITES)}] ...')
        return 0 if not unknown else 2
    for name in names:
        importlib.import_module(f'benchmarks.{name}').main()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
