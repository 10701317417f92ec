# Passes cargo test's output through and ends it with one total line:
# "N passed, N failed" (and ", N skipped" for ignored tests).
{ print; fflush() }
/^test result: / {
    for (i = 1; i <= NF; i++) {
        n = $i + 0
        if ($(i + 1) ~ /^passed/) passed += n
        if ($(i + 1) ~ /^failed/) failed += n
        if ($(i + 1) ~ /^ignored/) ignored += n
    }
}
END {
    line = (passed + 0) " passed, " (failed + 0) " failed"
    if (ignored > 0) line = line ", " ignored " skipped"
    print line
}
