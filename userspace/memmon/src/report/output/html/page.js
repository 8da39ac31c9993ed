window.memmonErrors = [];
window.addEventListener('error', function (e) {
  window.memmonErrors.push(String(e.message));
  document.body.setAttribute('data-script-errors', window.memmonErrors.join(' | '));
});
function showFlame(weight) {
  document.querySelectorAll('iframe.flame').forEach(function (f) {
    f.style.display = f.id === 'flame-' + weight ? 'block' : 'none';
  });
  document.querySelectorAll('.switch button').forEach(function (b) {
    b.className = b.getAttribute('data-weight') === weight ? 'on' : '';
  });
}
function sortTable(th) {
  var table = th.closest('table'), body = table.tBodies[0];
  var index = Array.prototype.indexOf.call(th.parentNode.children, th);
  var numeric = th.classList.contains('n');
  var down = th.getAttribute('data-down') !== 'true';
  th.setAttribute('data-down', down ? 'true' : 'false');
  var rows = Array.prototype.slice.call(body.rows);
  rows.sort(function (a, b) {
    var x = a.cells[index], y = b.cells[index];
    var u = numeric ? Number(x.getAttribute('data-v')) : x.textContent;
    var v = numeric ? Number(y.getAttribute('data-v')) : y.textContent;
    return (u < v ? -1 : u > v ? 1 : 0) * (down ? -1 : 1);
  });
  rows.forEach(function (r) { body.appendChild(r); });
}
document.addEventListener('DOMContentLoaded', function () {
  document.body.setAttribute('data-dom-loaded-ms', String(Math.round(performance.now())));
  document.querySelectorAll('th').forEach(function (th) {
    th.addEventListener('click', function () { sortTable(th); });
  });
  var first = document.querySelector('.switch button');
  if (first) { showFlame(first.getAttribute('data-weight')); }
  document.body.setAttribute('data-ready', 'true');
});
