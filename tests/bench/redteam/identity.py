# expect: INCORRECT_NUMERICAL  (returns its input)
def run(x, weight, eps):
    return x
