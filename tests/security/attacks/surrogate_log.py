# expect: RUNTIME_ERROR recorded safely. Prints and raises text with a lone surrogate and other
# bytes that are not UTF-8; the supervisor must record it and name the real hardware.
import sys


def run(x, weight, eps):
    sys.stdout.write("half a pair: \ud800 and a NUL \x00 and \udcff\n")
    sys.stdout.flush()
    raise ValueError("lone surrogate \ud83d in the message \udc80")
