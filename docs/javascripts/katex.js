// KaTeX typesets the equations in the reader's browser: the spans pymdownx.arithmatex writes for
// $…$ and $$…$$ in the Markdown pages (\( … \), \[ … \]), and the notebook's own $…$, after each of
// Material's instant page loads too. Code blocks are left alone (KaTeX skips pre and code).
document$.subscribe(({body}) => {
  renderMathInElement(body, {
    delimiters: [
      {left: "$$", right: "$$", display: true},
      {left: "$", right: "$", display: false},
      {left: "\\(", right: "\\)", display: false},
      {left: "\\[", right: "\\]", display: true},
    ],
    throwOnError: false,
  });
});
