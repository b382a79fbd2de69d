"""What several test files share, kept out of the test files themselves (a test file never
imports another): tiny checkpoints built as the trainer builds them (:mod:`helpers.checkpoints`),
the scripts loaded and fed as a user would (:mod:`helpers.scripts`), a run folder's logs
(:mod:`helpers.runs`), the grammar's tree builders and hand-checked golden pairs
(:mod:`helpers.grammar`), and the ``torch.nn.Transformer`` twin's weights (:mod:`helpers.twins`).
Fixtures live in ``conftest.py``; these are plain functions and data."""
