"""In-process ``tjap`` calls and the one-line error contract, shared by the CLI tests."""

from __future__ import annotations

from tjap.cli import main


def run(capsys, *argv):
    """Run ``tjap argv`` in-process; return (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, out, err, *fragments):
    assert code == 2
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tjap: error:"), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
