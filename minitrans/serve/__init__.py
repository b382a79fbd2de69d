"""The local web app of ``scripts/serve.py``: a JSON API (FastAPI) and one static page that draws
translations and their attention. May import every layer up to ``training``; nothing in minitrans imports it.
"""
