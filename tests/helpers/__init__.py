"""What several test files share, kept out of the test files themselves (a test file never
imports another): tiny models built as the trainer builds them (:mod:`helpers.models`), tiny
checkpoints saved as the trainer saves them (:mod:`helpers.checkpoints`), the scripts loaded and
fed as a user would (:mod:`helpers.scripts`), a run folder's logs (:mod:`helpers.runs`), the
grammar's tree builders and hand-checked golden pairs (:mod:`helpers.grammar`), the
``torch.nn.Transformer`` twin's weights (:mod:`helpers.twins`), and where the repository and the
stored fixtures are (:data:`REPO`, :data:`FIXTURES`), wherever in ``tests/`` a file sits.
Fixtures live in ``conftest.py``; these are plain functions and data."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"  # files stored with the tests: old checkpoints, exercise solutions
