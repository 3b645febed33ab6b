//! The dense layers a model can have ([`Role`]): what the description's layers, the
//! tensor ids of the model file and the configuration files name.

/// Which layer of the model a tensor belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
#[allow(missing_docs)]
pub enum Role {
    EncEmb = 1,
    EncWih = 2,
    EncWhh = 3,
    MemoryProj = 4,
    AttnQuery = 5,
    AttnKey = 6,
    AttnV = 7,
    AttnGeneral = 8,
    Bridge = 9,
    DecEmb = 10,
    DecWih = 11,
    DecWhh = 12,
    Attentional = 13,
    Out = 14,
    BridgeC = 15,
    AttnPosW = 16,
    AttnPosV = 17,
}

impl Role {
    /// Every role, in code order.
    pub(crate) const ALL: [Role; 17] = [
        Role::EncEmb,
        Role::EncWih,
        Role::EncWhh,
        Role::MemoryProj,
        Role::AttnQuery,
        Role::AttnKey,
        Role::AttnV,
        Role::AttnGeneral,
        Role::Bridge,
        Role::DecEmb,
        Role::DecWih,
        Role::DecWhh,
        Role::Attentional,
        Role::Out,
        Role::BridgeC,
        Role::AttnPosW,
        Role::AttnPosV,
    ];

    /// The name used in tensor names and configuration files.
    pub fn name(self) -> &'static str {
        match self {
            Role::EncEmb => "encoder.embedding",
            Role::EncWih => "encoder.w_ih",
            Role::EncWhh => "encoder.w_hh",
            Role::MemoryProj => "memory_proj",
            Role::AttnQuery => "attention.query",
            Role::AttnKey => "attention.key",
            Role::AttnV => "attention.v",
            Role::AttnGeneral => "attention.general",
            Role::Bridge => "bridge",
            Role::BridgeC => "bridge_c",
            Role::DecEmb => "decoder.embedding",
            Role::DecWih => "decoder.w_ih",
            Role::DecWhh => "decoder.w_hh",
            Role::Attentional => "attentional",
            Role::Out => "output",
            Role::AttnPosW => "attention.position_w",
            Role::AttnPosV => "attention.position_v",
        }
    }
}
