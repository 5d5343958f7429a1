"""guards completion bash|zsh|fish: a shell completion script, read from the parser itself
(so every subcommand, action and option guards has is completed, and nothing else)."""

from __future__ import annotations

import argparse

from guards.errors import ExitCode

HELP = "print a shell completion script (bash, zsh or fish)"
SHELLS = ("bash", "zsh", "fish")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "shell",
        choices=SHELLS,
        metavar="SHELL",
        help='bash: eval "$(guards completion bash)" in ~/.bashrc; zsh: the same in ~/.zshrc; '
        "fish: guards completion fish > ~/.config/fish/completions/guards.fish",
    )


class Node:
    """One level of the command tree: its words (subcommands or actions, with help) and
    its options."""

    def __init__(self) -> None:
        self.words: dict[str, str] = {}
        self.options: list[str] = []
        self.children: dict[str, Node] = {}


def tree(parser: argparse.ArgumentParser) -> Node:
    node = Node()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, child in action.choices.items():
                node.words[name] = helps.get(name, "")
                node.children[name] = tree(child)
        else:
            node.options.extend(o for o in action.option_strings if o.startswith("--"))
    return node


def run(args: argparse.Namespace) -> int:
    from guards.cli import build_parser

    root = tree(build_parser())
    print({"bash": bash, "zsh": zsh, "fish": fish}[args.shell](root), end="")
    return ExitCode.OK


def _bash_cases(root: Node) -> str:
    """``case "$path" in ...``: the words and options offered after each command path."""
    lines = []

    def visit(node: Node, path: str) -> None:
        offers = " ".join([*node.words, *node.options])
        lines.append(f'        "{path}") offers="{offers}" ;;')
        for name, child in node.children.items():
            visit(child, f"{path} {name}".strip())

    visit(root, "")
    return "\n".join(lines)


def bash(root: Node) -> str:
    # The command path is the leading words that name subcommands and actions; what
    # follows is completed from the words and options of that path, else file names.
    return f"""# guards completion for bash: eval "$(guards completion bash)"
_guards_complete() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" path="" offers="" i word
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        [[ "$word" == -* ]] && continue
        case " $(_guards_words "$path") " in
            *" $word "*) path="${{path:+$path }}$word" ;;
            *) break ;;
        esac
    done
    if [[ "$cur" == -* ]]; then
        offers="$(_guards_offers "$path")"
    else
        offers="$(_guards_words "$path")"
    fi
    COMPREPLY=($(compgen -W "$offers" -- "$cur"))
    if [[ ${{#COMPREPLY[@]}} -eq 0 && "$cur" != -* ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}}
_guards_offers() {{
    local offers=""
    case "$1" in
{_bash_cases(root)}
    esac
    printf '%s' "$offers"
}}
_guards_words() {{
    local word
    for word in $(_guards_offers "$1"); do
        [[ "$word" == -* ]] || printf '%s ' "$word"
    done
}}
complete -o default -F _guards_complete guards
"""


def zsh(root: Node) -> str:
    return (
        '# guards completion for zsh: eval "$(guards completion zsh)"\n'
        "(( $+functions[compdef] )) || { autoload -U +X compinit && compinit }\n"
        "autoload -U +X bashcompinit && bashcompinit\n" + bash(root)
    )


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish(root: Node) -> str:
    lines = ["# guards completion for fish: guards completion fish | source"]
    top = " ".join(root.words)
    for name, text in root.words.items():
        lines.append(
            f"complete -c guards -n 'not __fish_seen_subcommand_from {top}' "
            f"-a {name} -d {_fish_quote(text)}"
        )
    for name, child in root.children.items():
        actions = " ".join(child.words)
        for action, text in child.words.items():
            lines.append(
                f"complete -c guards -n '__fish_seen_subcommand_from {name}; and not "
                f"__fish_seen_subcommand_from {actions}' -a {action} -d {_fish_quote(text)}"
            )
        options = set(child.options)
        for grandchild in child.children.values():
            options.update(grandchild.options)
        for option in sorted(options):
            lines.append(
                f"complete -c guards -n '__fish_seen_subcommand_from {name}' -l {option[2:]}"
            )
    return "\n".join(lines) + "\n"
