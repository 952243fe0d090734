//! Software images through Glance (image API v2): the package's `sw_image_data` with an image
//! file (the VDU's or virtual storage's `sw_image` artifact) is uploaded at instantiate, or
//! found when it is there already, and removed when no instance uses it any more.
//!
//! **Identity.** An image is the one of a package when it has the `sw_image_data` name and the
//! same content: the SHA-256 of the file recorded in its `vnfm_sha256` property (images this
//! driver uploaded), or Glance's own `os_hash_value` when the VNFD's checksum uses Glance's hash
//! algorithm (an image an operator uploaded).
//!
//! **Ownership and removal.** Images this driver creates carry the tag `vnfm-managed` and, per
//! VNF instance that uses them, a tag `vnfm-instance:<instanceId>`; the image's tags are its
//! use count, kept in Glance itself (it survives a restart of the VNFM and needs no state). At
//! terminate (and at the rollback of an instantiation) the instance's tag is removed, and an
//! image left with no instance tag is deleted. Images the driver did not create are used as
//! they are and never tagged or deleted.

use std::collections::BTreeMap;

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sha2::Digest;
use vnfm_descriptor::{Flavour, SwImage};
use vnfm_driver_api::{DriverError, RunControl};

use crate::config::PollPolicy;
use crate::error::OpenStackError;
use crate::heat::enc;
use crate::keystone::{ServiceApi, Session};

/// The tag of images this driver created.
pub const MANAGED_TAG: &str = "vnfm-managed";

/// The tag an instance puts on a managed image it uses.
pub fn instance_tag(instance_id: &str) -> String {
    format!("vnfm-instance:{instance_id}")
}

/// An image as `GET /v2/images/{id}` shows it (the members used here).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Image {
    /// The id.
    pub id: String,
    /// The name.
    #[serde(default)]
    pub name: Option<String>,
    /// `queued`, `saving`, `active`, ...
    pub status: String,
    /// The tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Glance's hash algorithm (`sha512` by default).
    #[serde(default)]
    pub os_hash_algo: Option<String>,
    /// Glance's hash of the data.
    #[serde(default)]
    pub os_hash_value: Option<String>,
    /// The SHA-256 of the data this driver uploaded.
    #[serde(default)]
    pub vnfm_sha256: Option<String>,
}

impl Image {
    /// Whether this driver created the image.
    pub fn managed(&self) -> bool {
        self.tags.iter().any(|t| t == MANAGED_TAG)
    }

    /// Whether an instance still uses the image.
    pub fn in_use(&self) -> bool {
        self.tags.iter().any(|t| t.starts_with("vnfm-instance:"))
    }
}

/// The image API of one VIM, for one step.
pub struct Glance<'a> {
    api: ServiceApi<'a>,
    vim: &'a str,
}

impl<'a> Glance<'a> {
    /// Finds the image endpoint in the catalog; `vim` names the VIM connection in errors.
    pub async fn connect(
        session: &'a Session,
        control: &'a RunControl,
        poll: PollPolicy,
        vim: &'a str,
    ) -> Result<Glance<'a>, DriverError> {
        Ok(Glance {
            api: ServiceApi::connect(session, control, poll, "image").await?,
            vim,
        })
    }

    fn url(&self, tail: &str) -> String {
        format!("{}/v2/images{tail}", self.api.base.trim_end_matches('/'))
    }

    async fn call(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Option<Value>, DriverError> {
        let r = self
            .api
            .session
            .call(
                self.api.control,
                "glance",
                method.clone(),
                url,
                body,
                &[404],
            )
            .await?;
        if r.status.as_u16() == 404 {
            return Ok(None);
        }
        Ok(Some(r.json(&format!("{method} {url}"), "glance")?))
    }

    fn parse(&self, v: Value, what: &str) -> Result<Image, DriverError> {
        serde_json::from_value(v).map_err(|source| {
            OpenStackError::ResponseBody {
                what: what.to_string(),
                service: "glance",
                problem: "not an image".into(),
                source,
            }
            .into()
        })
    }

    /// The image `id`, `None` when Glance does not know it.
    pub async fn image(&self, id: &str) -> Result<Option<Image>, DriverError> {
        match self
            .call(Method::GET, &self.url(&format!("/{}", enc(id))), None)
            .await?
        {
            Some(v) => self.parse(v, "GET /v2/images/{id}").map(Some),
            None => Ok(None),
        }
    }

    /// The images of the project visible under `query` (`name=...`, `tag=...`).
    pub async fn list(&self, query: &str) -> Result<Vec<Image>, DriverError> {
        let v = self
            .call(
                Method::GET,
                &self.url(&format!("?{query}&limit=1000")),
                None,
            )
            .await?
            .unwrap_or(Value::Null);
        let images = v.get("images").cloned().unwrap_or(Value::Array(Vec::new()));
        let Value::Array(items) = images else {
            return Ok(Vec::new());
        };
        items
            .into_iter()
            .map(|i| self.parse(i, "GET /v2/images"))
            .collect()
    }

    async fn tag(&self, id: &str, tag: &str, add: bool) -> Result<(), DriverError> {
        let url = self.url(&format!("/{}/tags/{}", enc(id), enc(tag)));
        let method = if add { Method::PUT } else { Method::DELETE };
        self.call(method, &url, None).await.map(|_| ())
    }

    fn error(&self, image: &str, message: String) -> DriverError {
        OpenStackError::Image {
            image: image.to_string(),
            vim: self.vim.to_string(),
            message,
        }
        .into()
    }

    /// Makes the image `sw` of the package (the data of its file `file`) available and used
    /// by `instance_id`; returns its id.
    pub async fn ensure(
        &self,
        sw: &SwImage,
        file: &str,
        data: Vec<u8>,
        instance_id: &str,
    ) -> Result<String, DriverError> {
        let declared = verify_checksum(sw, file, &data).map_err(|m| self.error(&sw.name, m))?;
        let sha256 = hex::encode(sha2::Sha256::digest(&data));
        let same = |i: &Image| {
            i.vnfm_sha256.as_deref() == Some(sha256.as_str())
                || declared.as_ref().is_some_and(|(algo, hash)| {
                    i.os_hash_algo.as_deref() == Some(algo.glance_name())
                        && i.os_hash_value.as_deref() == Some(hash.as_str())
                })
        };
        let candidates: Vec<Image> = self
            .list(&format!("name={}", enc(&sw.name)))
            .await?
            .into_iter()
            .filter(|i| same(i))
            .collect();
        let tag = instance_tag(instance_id);
        if let Some(found) = candidates.iter().find(|i| i.status == "active") {
            if found.managed() {
                self.tag(&found.id, &tag, true).await?;
            }
            tracing::info!(image = %sw.name, id = %found.id, vim = %self.vim, "software image found in Glance");
            return Ok(found.id.clone());
        }
        // A managed image that never got its data (a step that stopped after creating it):
        // upload into it rather than making another.
        let id = match candidates
            .iter()
            .find(|i| i.managed() && i.status == "queued")
        {
            Some(q) => {
                self.tag(&q.id, &tag, true).await?;
                q.id.clone()
            }
            None => self.create(sw, &sha256, &tag).await?,
        };
        self.upload(&sw.name, &id, data).await?;
        let image = self
            .image(&id)
            .await?
            .ok_or_else(|| self.error(&sw.name, format!("image {id} vanished after its upload")))?;
        if image.status != "active" {
            return Err(self.error(
                &sw.name,
                format!(
                    "image {id} is `{}` after its upload, not active",
                    image.status
                ),
            ));
        }
        tracing::info!(image = %sw.name, %id, vim = %self.vim, "software image uploaded to Glance");
        Ok(id)
    }

    async fn create(&self, sw: &SwImage, sha256: &str, tag: &str) -> Result<String, DriverError> {
        let mut body = Map::new();
        body.insert("name".into(), json!(sw.name));
        body.insert(
            "disk_format".into(),
            json!(sw.disk_format.as_deref().unwrap_or("raw")),
        );
        body.insert(
            "container_format".into(),
            json!(sw.container_format.as_deref().unwrap_or("bare")),
        );
        body.insert("visibility".into(), json!("private"));
        body.insert("tags".into(), json!([MANAGED_TAG, tag]));
        body.insert("vnfm_sha256".into(), json!(sha256));
        if !sw.version.is_empty() {
            body.insert("version".into(), json!(sw.version));
        }
        const GIB: u64 = 1 << 30;
        const MIB: u64 = 1 << 20;
        if let Some(d) = sw.min_disk_bytes {
            body.insert("min_disk".into(), json!(d.div_ceil(GIB)));
        }
        if let Some(r) = sw.min_ram_bytes {
            body.insert("min_ram".into(), json!(r.div_ceil(MIB)));
        }
        let v = self
            .call(Method::POST, &self.url(""), Some(&Value::Object(body)))
            .await?
            .unwrap_or(Value::Null);
        Ok(self.parse(v, "POST /v2/images")?.id)
    }

    async fn upload(&self, name: &str, id: &str, data: Vec<u8>) -> Result<(), DriverError> {
        let url = self.url(&format!("/{}/file", enc(id)));
        self.api
            .session
            .put_bytes(self.api.control, "glance", &url, data.into())
            .await
            .map(|_| ())
            .map_err(|e| {
                self.error(
                    name,
                    format!("uploading the data of image {id} failed: {e}"),
                )
            })
    }

    /// Removes `instance_id`'s use of the images it took, and deletes the managed images no
    /// instance uses any more; answers the ids deleted.
    pub async fn release(&self, instance_id: &str) -> Result<Vec<String>, DriverError> {
        let tag = instance_tag(instance_id);
        let mut deleted = Vec::new();
        for image in self.list(&format!("tag={}", enc(&tag))).await? {
            self.tag(&image.id, &tag, false).await?;
            let Some(now) = self.image(&image.id).await? else {
                continue;
            };
            if now.managed() && !now.in_use() {
                self.call(
                    Method::DELETE,
                    &self.url(&format!("/{}", enc(&now.id))),
                    None,
                )
                .await?;
                tracing::info!(id = %now.id, vim = %self.vim, "software image no instance uses any more deleted from Glance");
                deleted.push(now.id);
            }
        }
        Ok(deleted)
    }
}

/// A checksum algorithm of `sw_image_data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Algorithm {
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl Algorithm {
    fn parse(name: &str) -> Option<Algorithm> {
        match name.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
            "sha224" => Some(Algorithm::Sha224),
            "sha256" => Some(Algorithm::Sha256),
            "sha384" => Some(Algorithm::Sha384),
            "sha512" => Some(Algorithm::Sha512),
            _ => None,
        }
    }

    fn glance_name(self) -> &'static str {
        match self {
            Algorithm::Sha224 => "sha224",
            Algorithm::Sha256 => "sha256",
            Algorithm::Sha384 => "sha384",
            Algorithm::Sha512 => "sha512",
        }
    }

    fn hex(self, data: &[u8]) -> String {
        match self {
            Algorithm::Sha224 => hex::encode(sha2::Sha224::digest(data)),
            Algorithm::Sha256 => hex::encode(sha2::Sha256::digest(data)),
            Algorithm::Sha384 => hex::encode(sha2::Sha384::digest(data)),
            Algorithm::Sha512 => hex::encode(sha2::Sha512::digest(data)),
        }
    }
}

/// Checks `data` against the checksum of `sw`; answers the declared algorithm and hash
/// (lowercase), `None` when the VNFD declares none.
fn verify_checksum(
    sw: &SwImage,
    file: &str,
    data: &[u8],
) -> Result<Option<(Algorithm, String)>, String> {
    let Some(hash) = sw.checksum_hash.as_deref().map(str::to_ascii_lowercase) else {
        return Ok(None);
    };
    let name = sw.checksum_algorithm.as_deref().unwrap_or("sha-256");
    let algo = Algorithm::parse(name).ok_or_else(|| {
        format!("its checksum algorithm `{name}` is not one of sha-224, sha-256, sha-384, sha-512")
    })?;
    let actual = algo.hex(data);
    if actual != hash {
        return Err(format!(
            "the {name} checksum of its file `{file}` is {actual}, the VNFD's sw_image_data says {hash}; the package's image is not the one the VNFD describes"
        ));
    }
    Ok(Some((algo, hash)))
}

/// The software images of `flavour` that have a file in the package, by image name (VDUs,
/// then virtual storages), except those of VDUs whose image `granted` names (the NFVO chose
/// the VIM's image).
pub fn package_images(
    flavour: &Flavour,
    granted: impl Fn(&str) -> bool,
) -> BTreeMap<String, (&SwImage, String)> {
    let mut out = BTreeMap::new();
    let vdus = flavour
        .vdus
        .iter()
        .filter(|v| !granted(&v.id))
        .filter_map(|v| v.sw_image.as_ref());
    let storages = flavour
        .virtual_storages
        .iter()
        .filter(|s| !granted(&s.id))
        .filter_map(|s| s.sw_image.as_ref());
    for sw in vdus.chain(storages) {
        // A URI names an image outside the package; only package files are uploaded.
        if let Some(file) = sw.file.as_deref().filter(|f| !f.contains("://")) {
            out.entry(sw.name.clone())
                .or_insert_with(|| (sw, file.trim_start_matches('/').to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sw(algo: &str, hash: &str) -> SwImage {
        SwImage {
            name: "img".into(),
            checksum_algorithm: Some(algo.into()),
            checksum_hash: Some(hash.into()),
            ..SwImage::default()
        }
    }

    #[test]
    fn checksums_are_verified_with_the_declared_algorithm() {
        let data = b"abc";
        let sha256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(
            verify_checksum(&sw("sha-256", &sha256.to_uppercase()), "f", data).unwrap(),
            Some((Algorithm::Sha256, sha256.to_string()))
        );
        let sha512 = hex::encode(sha2::Sha512::digest(data));
        assert!(verify_checksum(&sw("SHA512", &sha512), "f", data).is_ok());
        let wrong =
            verify_checksum(&sw("sha-256", &sha512[..64]), "Files/x.img", data).unwrap_err();
        assert!(
            wrong.contains("Files/x.img") && wrong.contains(sha256),
            "{wrong}"
        );
        assert!(
            verify_checksum(&sw("md5", "x"), "f", data)
                .unwrap_err()
                .contains("md5")
        );
        assert_eq!(
            verify_checksum(&SwImage::default(), "f", data).unwrap(),
            None
        );
    }

    #[test]
    fn images_tell_ownership_and_use_by_their_tags() {
        let i: Image = serde_json::from_value(json!({
            "id": "1", "name": "img", "status": "active",
            "tags": [MANAGED_TAG, instance_tag("a")], "vnfm_sha256": "ab"
        }))
        .unwrap();
        assert!(i.managed() && i.in_use());
        let j: Image =
            serde_json::from_value(json!({"id": "2", "status": "active", "tags": [MANAGED_TAG]}))
                .unwrap();
        assert!(j.managed() && !j.in_use());
    }
}
