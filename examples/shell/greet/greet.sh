#!/bin/sh
# greet: `/greet NAME` displays "hello, NAME"; the `uptime` tool reports the
# machine's uptime. POSIX sh and sed only: one JSON frame per line each way.

send() { printf '%s\n' "$1"; }

# str KEY: the (still JSON-escaped) string value of the first "KEY":"..." in
# $line. zot writes `type` and `id` before any nested args, so the first
# match is the frame's own.
str() {
    case $line in *\"$1\":\"*) ;; *) return ;; esac
    printf '%s\n' "${line#*\"$1\":\"}" | sed -E 's/^(([^"\\]|\\.)*)".*/\1/'
}

# escape TEXT: TEXT as the inside of a JSON string.
escape() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr '\t\r\n' '   '; }

send '{"type":"hello","name":"greet","version":"1.0.0","capabilities":["commands","tools"]}'
while IFS= read -r line; do
    type=$(str type)
    id=$(str id)
    case $type in
    hello_ack)
        send '{"type":"register_command","name":"greet","description":"say hello to NAME"}'
        send '{"type":"register_tool","name":"uptime","description":"How long the machine has been up.","schema":{"type":"object","properties":{}}}'
        send '{"type":"ready"}' ;;
    command_invoked)
        name=$(str args)
        send "{\"type\":\"command_response\",\"id\":\"$id\",\"action\":\"display\",\"display\":\"hello, ${name:-world}\"}" ;;
    tool_call)
        up=$(escape "$(uptime 2>/dev/null || date)")
        send "{\"type\":\"tool_result\",\"id\":\"$id\",\"content\":[{\"type\":\"text\",\"text\":\"$up\"}]}" ;;
    event_intercept)
        send "{\"type\":\"event_intercept_response\",\"id\":\"$id\"}" ;;
    shutdown)
        send '{"type":"shutdown_ack"}'
        exit 0 ;;
    esac
done
