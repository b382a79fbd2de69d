"""The local web app of ``scripts/serve.py``: a JSON API (FastAPI) and one static page that draws
translations and their attention. Outside the core layers: nothing in minitrans imports it.
"""
