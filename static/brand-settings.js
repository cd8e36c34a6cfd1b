/* Settings page, "What applicants see": the header sample follows the name and colour as they are typed, and
   the colour picker (shown only with JavaScript) fills in the brand colour field. The server checks every value. */
(function () {
  "use strict";

  var HEX = /^#?([0-9a-f]{6}|[0-9a-f]{3})$/i;

  function normalColour(text) {
    var match = HEX.exec(text.trim());
    if (!match) { return null; }
    var digits = match[1];
    if (digits.length === 3) {
      digits = digits.split("").map(function (digit) { return digit + digit; }).join("");
    }
    return "#" + digits.toLowerCase();
  }

  document.addEventListener("DOMContentLoaded", function () {
    var sample = document.querySelector("[data-brand-sample]");
    var nameField = document.getElementById("display_name");
    var colourField = document.getElementById("brand_colour");
    var picker = document.querySelector("[data-colour-picker]");
    if (!sample || !nameField || !colourField || !picker) { return; }
    var background = sample.querySelector("[data-sample-background]");
    var name = sample.querySelector("[data-sample-name]");

    function showColour(colour) {
      background.setAttribute("fill", colour);
      picker.value = colour;
    }

    nameField.addEventListener("input", function () {
      name.textContent = nameField.value.trim() || sample.getAttribute("data-default-name");
    });
    colourField.addEventListener("input", function () {
      var typed = colourField.value.trim();
      var colour = typed ? normalColour(typed) : sample.getAttribute("data-default-colour");
      if (colour) { showColour(colour); }
    });
    picker.addEventListener("input", function () {
      colourField.value = picker.value;
      showColour(picker.value);
    });
    document.querySelector("[data-colour-picker-row]").hidden = false;
  });
})();
