// The status page's lift buttons: DELETE /robots/bans/<identity> to the
// origin the page came from (the admin endpoint's origin checks hold), and
// the ban's row goes away once the admin API says it is lifted.
document.addEventListener("click", function (e) {
	var b = e.target.closest("button.lift");
	if (!b) {
		return;
	}
	b.disabled = true;
	var base = location.pathname.endsWith("/") ? location.pathname : location.pathname + "/";
	fetch(base + "bans/" + encodeURIComponent(b.dataset.identity), {method: "DELETE"})
		.then(function (r) {
			if (r.ok) {
				// The row goes now; the counts on the page follow with
				// a fresh copy of it.
				b.closest("tr").remove();
				setTimeout(function () { location.reload(); }, 300);
				return;
			}
			return r.text().then(function (t) {
				var msg = t;
				try { msg = JSON.parse(t).error || t; } catch (_) {}
				throw new Error(r.status + ": " + msg);
			});
		})
		.catch(function (err) {
			b.disabled = false;
			var p = b.parentNode.querySelector(".lift-error");
			if (!p) {
				p = b.parentNode.appendChild(document.createElement("span"));
				p.className = "err lift-error";
			}
			p.textContent = " " + err.message;
		});
});
