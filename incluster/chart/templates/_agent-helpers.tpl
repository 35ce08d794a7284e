{{- /* Helpers for the agent templates. */ -}}

{{- /* agent.metricsAuth: token (default) or none; anything else refuses to render. */ -}}
{{- define "gpupool.agentMetricsAuth" -}}
{{- $a := .Values.agent | default dict -}}
{{- $mode := ternary (toString $a.metricsAuth) "token" (hasKey $a "metricsAuth") -}}
{{- if not (has $mode (list "token" "none")) -}}
{{- fail (printf "agent.metricsAuth must be token or none, not %q (docs/security.md, \"The node agent\")" $mode) -}}
{{- end -}}
{{- $mode -}}
{{- end -}}
