# expect: RUNTIME_ERROR with the traceback in the log
def run(x, weight, eps):
    raise ValueError("this kernel is broken on purpose")
