{{- define "gateway.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gateway.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "gateway.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "gateway.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "gateway.secretName" -}}
{{- .Values.existingSecret | default (printf "%s-secrets" (include "gateway.fullname" .)) -}}
{{- end -}}

{{- define "gateway.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "gateway.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* The environment of every container: the ConfigMap's plain settings, then the Secret. */}}
{{- define "gateway.envFrom" -}}
- configMapRef:
    name: {{ include "gateway.fullname" . }}-config
- secretRef:
    name: {{ include "gateway.secretName" . }}
{{- end -}}

{{/* Pod-level settings shared by every workload. */}}
{{- define "gateway.podSpec" -}}
serviceAccountName: {{ include "gateway.serviceAccountName" . }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end -}}

{{/* Container-level settings shared by every container: image, environment, security, a writable /tmp. */}}
{{- define "gateway.container" -}}
image: {{ include "gateway.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
envFrom:
  {{- include "gateway.envFrom" . | nindent 2 }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
volumeMounts:
  - name: tmp
    mountPath: /tmp
{{- end -}}

{{- define "gateway.tmpVolume" -}}
- name: tmp
  emptyDir: {}
{{- end -}}

{{/* The pod's grace period: preStop sleep + drain + streams' graceful timeout + accounting drain + margin. */}}
{{- define "gateway.terminationGracePeriod" -}}
{{- add .Values.drain.preStopSleepSeconds .Values.drain.seconds .Values.drain.gracefulTimeoutSeconds .Values.drain.shutdownSeconds 5 -}}
{{- end -}}
