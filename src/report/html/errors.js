// report.html: records script errors into the page (#js-errors and <html data-js-errors>), so
// that a reader and the browser test see them without a console.
window.mcpevalErrors = [];
window.addEventListener('error', function (event) {
  var text = (event.message || 'error') + ' (line ' + (event.lineno || '?') + ')';
  window.mcpevalErrors.push(text);
  document.documentElement.setAttribute('data-js-errors', String(window.mcpevalErrors.length));
  var box = document.getElementById('js-errors');
  if (box && document.documentElement.hasAttribute('data-report-ready')) {
    box.hidden = false;
    box.textContent += text + '\n';
  }
});
