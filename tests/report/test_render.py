

def test_names_cannot_become_formulas_or_html() -> None:
    """Solution names and authors are the solutions' (session 19: `=HYPERLINK(...)` was a live
    formula in the CSV exports, `<img onerror=...>` live HTML in the markdown tables)."""
    import pandas as pd

    from flashinfer_bench.report.render import markdown_table, to_csv

    df = pd.DataFrame({"solution": ['=HYPERLINK("http://evil.example","x")', "+1+1", "@SUM(A1)", "-2+3", "fine"],
                       "author": ["<img src=x onerror=alert(1)>", "a", "b", "c", "d"],
                       "speedup": [1.5, -2.0, 3.0, 4.0, 5.0]})
    csv = to_csv(df)
    for bad in ("=HYPERLINK", "+1+1", "@SUM", "-2+3"):
        assert f"\n'{bad}" in csv or f",'{bad}" in csv or f"\"'{bad}" in csv, csv
    assert "a,-2.0\n" in csv  # numbers stay numbers
    md = markdown_table(df)
    assert "<img" not in md and "&lt;img" in md, md
