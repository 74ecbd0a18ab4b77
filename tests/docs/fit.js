// What a page shows cut off, measured in the page: run by tests/docs/test_pages_fit.py in headless
// Chromium at each window width. Returns {problems, scrolling, columns, content}:
//   problems   the page scrolls sideways; an element sticks out of the content column and no
//              scrolling box holds it; an element hides text it cannot show (overflow hidden/clip)
//   scrolling  the code blocks and tables that scroll sideways inside their own box, with the classes
//              of the block (highlight-python, highlight-bash, command-help, table-wrapper, ...)
//   columns    the characters of monospace text a code block shows in a line
//   content    the content column's width in pixels
(() => {
  const article = document.querySelector("article[role=main]") || document.querySelector("article");
  const column = article.closest(".content") || article;  // furo's content column, its padding included
  const box = column.getBoundingClientRect();
  const name = (el) => `${el.tagName.toLowerCase()}${el.className && typeof el.className === "string"
    ? "." + el.className.trim().split(/\s+/).join(".") : ""} "${(el.innerText || "").trim().slice(0, 60).replace(/\s+/g, " ")}"`;
  const scrolls = (el) => ["auto", "scroll"].includes(getComputedStyle(el).overflowX);
  const inScroller = (el) => {
    for (let a = el.parentElement; a && a !== article; a = a.parentElement) {
      if (scrolls(a)) return true;
    }
    return false;
  };
  const problems = [];
  const page = document.documentElement.scrollWidth;
  if (page > window.innerWidth + 1) {
    problems.push(`the page scrolls sideways: ${page} px wide in a ${window.innerWidth} px window`);
  }
  for (const el of article.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height || getComputedStyle(el).visibility === "hidden") continue;
    if (r.right > box.right + 1 && !inScroller(el)) {
      problems.push(`sticks out of the content column by ${Math.round(r.right - box.right)} px: ${name(el)}`);
    }
    if (["hidden", "clip"].includes(getComputedStyle(el).overflowX) && el.scrollWidth > el.clientWidth + 1) {
      problems.push(`hides ${el.scrollWidth - el.clientWidth} px of its text: ${name(el)}`);
    }
  }
  const scrolling = [...article.querySelectorAll("pre, .table-wrapper")]
    .filter((el) => el.scrollWidth > el.clientWidth + 1)
    .map((el) => ({what: name(el), kind: (el.closest("div[class*=highlight-]") || el).className}));
  let columns = null;
  const pre = article.querySelector("pre");
  if (pre) {
    const probe = document.createElement("span");
    probe.textContent = "x".repeat(100);
    pre.appendChild(probe);
    const style = getComputedStyle(pre);
    const inner = pre.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    columns = Math.floor(inner / (probe.getBoundingClientRect().width / 100));
    probe.remove();
  }
  return {problems, scrolling, columns, content: Math.round(box.width)};
})()
