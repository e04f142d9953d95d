# expect: RUNTIME_ERROR naming the file size limit: prints more than the runner may write
import sys


def run(x, weight, eps):
    line = "y" * 1023 + "\n"
    for _ in range(__LINES__):
        sys.stdout.write(line)
    return x
