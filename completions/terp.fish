# fish completion for terp; `make install` puts it in
# $PREFIX/share/fish/vendor_completions.d/terp.fish.

function __terp_ids
    command terp --list --ids 2>/dev/null
end

complete -c terp -n '__fish_use_subcommand' -a 'exec serve' -d 'subcommand'
complete -c terp -s p -l prompt -r -d 'the question (- reads stdin)'
complete -c terp -s c -l code -r -d '(exec) a cell'
complete -c terp -l stop-on-error -d '(exec) stop at the first failing cell'
complete -c terp -l json -d 'print JSON lines'
complete -c terp -l out -r -a '(__fish_complete_directories)' -d 'where artifacts are copied'
complete -c terp -l provider -x -a 'openai azure anthropic ollama demo' -d 'the model provider'
complete -c terp -l model -x -d 'model (or provider:model)'
complete -c terp -l base-url -x -d "the provider's endpoint"
complete -c terp -l reasoning -x -a 'off low medium high' -d 'how hard the model thinks'
complete -c terp -l show-reasoning -d "(-p) the model's reasoning on stderr"
complete -c terp -l api -x -a 'responses chat' -d 'OpenAI/Azure API'
complete -c terp -l max-turns -x -d 'model calls per question'
complete -c terp -l strict-numbers -d '(-p) exit 6 on an untraced number'
complete -c terp -l no-input -d "the model's cells may not ask for input()"
complete -c terp -l ask -d "(notebook) each model cell waits for your approval"
complete -c terp -l max-cost -x -d 'dollars a session may spend'
complete -c terp -l max-retries -x -d 'retries of a failed model request'
complete -c terp -l tool-output-limit -x -d 'tool result bytes sent to the model'
complete -c terp -l context-window -x -d "the model's context window"
complete -c terp -l system -r -F -d 'replace the system prompt'
complete -c terp -l memory -x -d 'sandbox memory limit'
complete -c terp -l disk -x -d 'workspace disk limit'
complete -c terp -l timeout -x -d 'per-cell time limit'
complete -c terp -l grace -x -d 'wait after an interrupt'
complete -c terp -l max-procs -x -d 'processes in the sandbox'
complete -c terp -l max-file-size -x -d 'largest file the code may write'
complete -c terp -l max-open-files -x -d 'open files in the sandbox'
complete -c terp -l max-artifact-size -x -d 'largest artifact copied out'
complete -c terp -l python -r -F -d 'the Python to run'
complete -c terp -l allow-host -x -d 'let the sandbox reach HOST'
complete -c terp -l egress-max -x -d 'bytes the session may send out'
complete -c terp -l network -d "the host's network"
complete -c terp -l no-sandbox -d 'no isolation (not recommended)'
complete -c terp -l sandbox -x -a 'local ssh:// jupyter+http:// jupyter+https:// aca:' -d 'where the Python session runs'
complete -c terp -l sandbox-token-env -x -d "the remote's token variable"
complete -c terp -l sandbox-token-cmd -x -d "the remote's token command"
complete -c terp -l jupyter-kernel -x -d 'the Jupyter kernelspec'
complete -c terp -l ssh-command -x -d 'the ssh client'
complete -c terp -l ssh-terp -x -d 'terp on the ssh host'
complete -c terp -l theme -x -a 'default light mono' -d 'TUI colour theme'
complete -c terp -l images -x -a 'auto kitty iterm sixel blocks off' -d 'how pictures are drawn'
complete -c terp -s h -l help -d 'help'
complete -c terp -s V -l version -d 'the version'
complete -c terp -l list -d 'list the saved sessions'
complete -c terp -l delete -x -a '(__terp_ids)' -d 'delete a saved session'
complete -c terp -l export -r -a '(__terp_ids)' -d 'write a session to FILE'
complete -c terp -l resume -x -a '(__terp_ids)' -d 'continue a session'
complete -c terp -l replay -d '(with --resume) re-run the cells first'
complete -c terp -l no-save -d 'remove the session at the end'
complete -c terp -l idle-timeout -x -d 'stop an idle sandbox'
complete -c terp -l max-session -x -d 'end the session after DUR'
