# expect: TIMEOUT  (never returns)
import time


def run(x, weight, eps):
    while True:
        time.sleep(3600)
