# bash completion for terp; `make install` puts it in
# $PREFIX/share/bash-completion/completions/terp.

_terp()
{
	local cur prev
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_CWORD:+${COMP_WORDS[COMP_CWORD-1]}}
	local opts="--prompt -p --code -c --stop-on-error --json --out --provider
	    --model --base-url --reasoning --show-reasoning --api --max-turns
	    --strict-numbers --no-input --ask --max-cost --max-retries
	    --tool-output-limit --context-window --system --memory --disk
	    --timeout --grace --max-procs --max-file-size --max-open-files
	    --max-artifact-size --python --allow-host --egress-max --network
	    --no-sandbox --sandbox --sandbox-token-env --sandbox-token-cmd
	    --jupyter-kernel --ssh-command --ssh-terp --theme --images --help -h
	    --version -V --list --delete --export --resume --replay --no-save
	    --idle-timeout --max-session"

	COMPREPLY=()
	case $prev in
	--resume|--delete|--export)
		# the saved sessions' ids, newest first
		COMPREPLY=($(compgen -W "$(command terp --list --ids 2>/dev/null)" -- "$cur"))
		return 0 ;;
	--sandbox)
		COMPREPLY=($(compgen -W "local ssh:// jupyter+http:// jupyter+https:// aca:" -- "$cur"))
		compopt -o nospace 2>/dev/null
		return 0 ;;
	--provider)
		COMPREPLY=($(compgen -W "openai azure anthropic ollama demo" -- "$cur"))
		return 0 ;;
	--theme)
		COMPREPLY=($(compgen -W "default light mono" -- "$cur"))
		return 0 ;;
	--images)
		COMPREPLY=($(compgen -W "auto kitty iterm sixel blocks off" -- "$cur"))
		return 0 ;;
	--reasoning)
		COMPREPLY=($(compgen -W "off low medium high" -- "$cur"))
		return 0 ;;
	--api)
		COMPREPLY=($(compgen -W "responses chat" -- "$cur"))
		return 0 ;;
	--out)
		COMPREPLY=($(compgen -d -- "$cur"))
		return 0 ;;
	--python|--system)
		COMPREPLY=($(compgen -f -- "$cur"))
		return 0 ;;
	-p|--prompt|-c|--code|--model|--base-url|--max-turns|--max-cost|\
	--max-retries|--tool-output-limit|--context-window|--memory|--disk|\
	--timeout|--grace|--max-procs|--max-file-size|--max-open-files|\
	--max-artifact-size|--allow-host|--egress-max|--sandbox-token-env|\
	--sandbox-token-cmd|--jupyter-kernel|--ssh-command|--ssh-terp|\
	--idle-timeout|--max-session)
		return 0 ;;	# a value of the user's own
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
		return 0
	fi
	if [[ $COMP_CWORD -eq 1 ]]; then
		COMPREPLY=($(compgen -W "exec serve" -- "$cur"))
	fi
	# data files
	COMPREPLY+=($(compgen -f -- "$cur"))
	return 0
}
complete -o filenames -o bashdefault -F _terp terp
