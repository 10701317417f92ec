# Passes cargo test's output through and ends it with one total line:
# "N passed, N failed, N skipped". Skipped are the ignored tests and the
# tests that said they skip: such a test writes one line "SKIP: <why>"
# straight to stderr (past the test harness's capture) and then passes, so
# each SKIP: is taken off the passed ones. With --quiet the marker may
# follow the progress dots on the same line, so it is counted anywhere.
{ print; fflush() }
/SKIP: / {
    line = $0
    skips += gsub(/SKIP: /, "", line)
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
    print (passed - skips) " passed, " (failed + 0) " failed, " (ignored + skips) " skipped"
}
