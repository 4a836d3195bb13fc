"""Text that JSON writers disagree on when they disagree at all: for the tests that hold a byte template
(``acpio.schema._writers``, ``acpio.app.update_templates``) to pydantic's output."""

AWKWARD = [
    "",
    'quote " and backslash \\ and slash /',
    "controls \x00\x01\x08\t\n\x0b\x0c\r\x1b\x1f and DEL \x7f and C1 \x85\x9f",
    "line separators \u2028 \u2029 and BOM \ufeff",
    "non-BMP \U0001f600 \U00010348 and combining e\u0301",
    "</script> & <!-- html -->",
    "\\u0041 is not A",
]
