// Renders the OpenAPI document into #swagger-ui (an external file: the CSP allows no inline script).
document.addEventListener("DOMContentLoaded", () => {
  const container = document.getElementById("swagger-ui");
  window.ui = window.SwaggerUIBundle({
    url: container.dataset.openapiUrl,
    domNode: container,
    deepLinking: true,
    validatorUrl: null, // no badge fetched from an outside validator
    defaultModelsExpandDepth: 0,
    docExpansion: "list",
  });
});
