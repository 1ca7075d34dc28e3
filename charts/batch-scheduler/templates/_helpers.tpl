{{/* The release's full name: the release name, prefixed to the chart's
name unless it already contains it; at most 63 characters. */}}
{{- define "batch-scheduler.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "batch-scheduler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "batch-scheduler.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Labels every object carries. */}}
{{- define "batch-scheduler.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* What selects the scheduler's pods; never changes across upgrades. */}}
{{- define "batch-scheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "batch-scheduler.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* The configuration file: config, plus the external-workloads informer
when externalWorkloads.enabled. */}}
{{- define "batch-scheduler.config" -}}
{{- $config := deepCopy .Values.config -}}
{{- if .Values.externalWorkloads.enabled -}}
{{- $informer := dict "name" "external-workloads" "resource" "ExternalWorkload" "source" (dict "kubeconfig" (dict "kubeconfig" "/etc/batch-scheduler/in-cluster.kubeconfig")) -}}
{{- $_ := set $config "customInformers" (append ($config.customInformers | default list) $informer) -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}
