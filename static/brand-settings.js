/* Settings page, "What applicants see": the header sample follows the name and colour as they are typed (and as
   they were typed when the server refused them), the colour picker (shown only with JavaScript) fills in the brand
   colour field, and a colour that white text does not contrast with at least 4.5:1 (the server's WCAG AA rule,
   core/institutions/identity.py) is warned about at once. The server checks every value. */
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

  var MINIMUM_CONTRAST = 4.5;

  function channel(pair) {
    var value = parseInt(pair, 16) / 255;
    return value <= 0.04045 ? value / 12.92 : Math.pow((value + 0.055) / 1.055, 2.4);
  }

  /* WCAG 2.x contrast ratio of white on `colour` (#rrggbb). */
  function contrastWithWhite(colour) {
    var luminance = 0.2126 * channel(colour.slice(1, 3)) + 0.7152 * channel(colour.slice(3, 5)) +
      0.0722 * channel(colour.slice(5, 7));
    return 1.05 / (luminance + 0.05);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var sample = document.querySelector("[data-brand-sample]");
    var nameField = document.getElementById("display_name");
    var colourField = document.getElementById("brand_colour");
    var picker = document.querySelector("[data-colour-picker]");
    if (!sample || !nameField || !colourField || !picker) { return; }
    var background = sample.querySelector("[data-sample-background]");
    var name = sample.querySelector("[data-sample-name]");
    var warning = document.querySelector("[data-contrast-warning]");

    function showColour(colour) {
      background.setAttribute("fill", colour);
      picker.value = colour;
      var ratio = contrastWithWhite(colour);
      var low = ratio < MINIMUM_CONTRAST;
      warning.textContent = low ? warning.getAttribute("data-message").replace("%(colour)s", colour)
        .replace("%(ratio).2f", ratio.toFixed(2)) : "";
      warning.hidden = !low;
    }

    function showName() {
      name.textContent = nameField.value.trim() || sample.getAttribute("data-default-name");
    }

    function showTypedColour() {
      var typed = colourField.value.trim();
      var colour = typed ? normalColour(typed) : sample.getAttribute("data-default-colour");
      if (colour) { showColour(colour); }
    }

    nameField.addEventListener("input", showName);
    colourField.addEventListener("input", showTypedColour);
    picker.addEventListener("input", function () {
      colourField.value = picker.value;
      showColour(picker.value);
    });
    document.querySelector("[data-colour-picker-row]").hidden = false;
    showName();
    showTypedColour();
  });
})();
