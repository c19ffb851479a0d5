"""GET /api/v1/audit-log: the organization's audit records (management key)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema

from audit.models import AuditEvent
from audit.selectors import audit_event_list
from audit.serializers import AuditEventSerializer, AuditFilterSerializer
from gateway_project.api.viewsets import OrganizationViewSet


class AuditLogViewSet(OrganizationViewSet):
    """Who changed what, and when: management changes through the API, the admin and SCIM, and refusals."""

    queryset = AuditEvent.objects.all()
    serializer_class = AuditEventSerializer

    @extend_schema(parameters=[AuditFilterSerializer], responses={200: AuditEventSerializer(many=True)})
    def list(self, request):
        filters = self.validated(AuditFilterSerializer, data=request.query_params)
        return self.list_response(audit_event_list(organization_id=self.principal.organization_id, filters=filters))
