// The theme scrolls the sidebar so that the current page's entry sits at its top, which hides the
// site name, the version and the search box above it. Keep them in view whenever the entry fits
// below them (the theme's own scrolling still applies to entries further down).
(function () {
  var nav = window.SphinxRtdTheme && window.SphinxRtdTheme.Navigation;
  if (!nav) return;
  var reset = nav.reset;
  nav.reset = function () {
    reset.apply(this, arguments);
    var side = document.querySelector(".wy-side-scroll");
    var current = document.querySelector(".wy-menu-vertical a.current")
      || document.querySelector(".wy-menu-vertical li.current > a");
    if (!side || !current) return;
    var bottom = current.getBoundingClientRect().bottom - side.getBoundingClientRect().top
      + side.scrollTop;
    if (bottom <= side.clientHeight) side.scrollTop = 0;
  };
})();
