# Passes cargo test's output through and ends it with one total line:
# "N passed, N failed, N skipped". Skipped are the ignored tests and the
# tests that said they skip (tests/common/skip.rs), which cargo counts as
# passed: each is taken off the passed ones. Such a test appends one
# record "<binary>\t<test>" to skips_file (counted once per test, read at
# the end) and writes a line "SKIP: <why>" straight to stderr; the line
# is counted too (with --quiet it may follow the progress dots on the same
# line), and the larger of the two counts is taken, so that a skip is
# counted once when both are there and still counted when its line was
# captured or its record could not be written.
{ print; fflush() }
/SKIP: / {
    line = $0
    said += gsub(/SKIP: /, "", line)
}
/^test result: / {
    for (i = 1; i <= NF; i++) {
        n = $i + 0
        if ($(i + 1) ~ /^passed/) passed += n
        if ($(i + 1) ~ /^failed/) failed += n
        if ($(i + 1) ~ /^ignored/) ignored += n
    }
}
END {
    recorded = 0
    if (skips_file != "") {
        while ((getline rec < skips_file) > 0) {
            if (!(rec in seen)) {
                seen[rec] = 1
                recorded++
            }
        }
        close(skips_file)
    }
    skips = recorded > said ? recorded : said
    print (passed - skips) " passed, " (failed + 0) " failed, " (ignored + skips) " skipped"
}
