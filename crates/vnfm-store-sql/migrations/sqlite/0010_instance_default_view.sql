-- Each instance's default view: its document without the members a list leaves out when the
-- request selects nothing (SOL003 VnfInstance, exclude_default). It is written by the same
-- statement as the document, so it is never older than it, and a list page whose filter the
-- indexed columns answer fully is these texts joined, with no document parsed.
ALTER TABLE vnf_instances ADD COLUMN default_view TEXT;
UPDATE vnf_instances SET default_view = json_remove(doc, '$.vnfConfigurableProperties',
    '$.vimConnectionInfo', '$.instantiatedVnfInfo', '$.metadata', '$.extensions');
