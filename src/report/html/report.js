// report.html: the page's only interactions (trial choice, filters, expanding tasks). It loads
// nothing; when it has run it marks <html data-report-ready="yes"> for the browser test.
(function () {
  'use strict';
  function showPair(task, trial) {
    document.querySelectorAll('.pair[data-task="' + task + '"]').forEach(function (pair) {
      pair.hidden = pair.getAttribute('data-trial') !== trial;
    });
  }
  document.querySelectorAll('select.trial-select').forEach(function (select) {
    var task = select.getAttribute('data-task');
    showPair(task, select.value);
    select.addEventListener('change', function () { showPair(task, select.value); });
  });
  var only = document.getElementById('only-regressed');
  var table = document.getElementById('verdicts');
  if (only && table) {
    var apply = function () { table.classList.toggle('only-regressed', only.checked); };
    only.addEventListener('change', apply);
    apply();
  }
  function openAll(open) {
    document.querySelectorAll('details.task').forEach(function (d) { d.open = open; });
  }
  var expand = document.getElementById('expand-all');
  var collapse = document.getElementById('collapse-all');
  if (expand) { expand.addEventListener('click', function () { openAll(true); }); }
  if (collapse) { collapse.addEventListener('click', function () { openAll(false); }); }
  // A task linked from the verdict table opens when followed.
  function openTarget() {
    var target = location.hash && document.getElementById(location.hash.slice(1));
    if (target && target.tagName === 'DETAILS') { target.open = true; }
  }
  window.addEventListener('hashchange', openTarget);
  openTarget();
  var box = document.getElementById('js-errors');
  (window.mcpevalErrors || []).forEach(function (text) {
    box.hidden = false;
    box.textContent += text + '\n';
  });
  document.documentElement.setAttribute('data-report-ready', 'yes');
})();
