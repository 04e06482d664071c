// thatch ui: a little behaviour on top of plain forms. The page works
// without it.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  // A form submits once: a double click must not forget twice.
  document.querySelectorAll("form[method=post]").forEach(function (f) {
    f.addEventListener("submit", function () {
      setTimeout(function () {
        f.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
      }, 0);
    });
  });
  // Changing the store or branch lists it at once.
  document.querySelectorAll("form.search select").forEach(function (s) {
    s.addEventListener("change", function () {
      var q = document.getElementById("q");
      if (q) { q.value = ""; }
      s.form.submit();
    });
  });
  // The flash message fades after a while.
  var flash = document.getElementById("flash");
  if (flash) { setTimeout(function () { flash.style.opacity = "0.5"; }, 4000); }
});
