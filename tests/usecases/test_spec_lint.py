"""What ralph.usecases.spec_lint reads as a requirement, its way to verify, and a placeholder; the
commands that refuse on it are in tests/cli/test_spec_check.py."""

from __future__ import annotations

from ralph.usecases.spec_lint import SpecProblemKind, spec_report
from ralph.usecases.specs import TEMPLATE


def test_what_counts_as_a_requirement_and_its_way_to_verify():
    text = """# X
## Requirements
- [ ] one — Check: `x` prints 1
* [X] two
  more words
  - verify: `y`
- [ ] three, with no way
```markdown
## Requirements
- [ ] quoted, not read
```
### A subsection still belongs to the requirements
+ [ ] four verify: `z`
## Constraints
- [ ] not a requirement here
"""
    report = spec_report(text)
    assert report.requirements == 4
    assert [(p.line, p.kind) for p in report.problems] == [(7, SpecProblemKind.UNVERIFIABLE)]
    assert [(p.line, p.kind) for p in spec_report("# X\nwords\n").problems] == [
        (1, SpecProblemKind.NO_REQUIREMENTS)
    ]
    assert [(p.line, p.kind) for p in spec_report("# X\n## Requirements\n\nnone\n").problems] == [
        (2, SpecProblemKind.NO_REQUIREMENTS)
    ]


def test_every_placeholder_of_the_template_is_found_and_the_opening_comment_may_stay():
    text = TEMPLATE.read_text().replace("$title", "App").replace("$name", "app")
    kinds = [(p.line, p.kind) for p in spec_report(text).problems]
    comments = [line for line, kind in kinds if kind == SpecProblemKind.PLACEHOLDER]
    assert len(comments) == 7  # five section comments and the two `<...>` items; not the opening one
    assert all(line > 8 for line in comments)


def test_a_users_own_comment_and_angle_brackets_are_no_placeholders():
    text = "# X\n<!-- my note -->\n## Requirements\n- [ ] `<div>` renders — verify: open the page\n"
    assert spec_report(text).ok
